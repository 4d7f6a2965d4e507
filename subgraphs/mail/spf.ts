import type { AuditAnswer, LookupBudget } from './lookup-budget';
import { looksLikeSpf, type ParsedSpf, parseSpfRecord, type SpfTerm } from './spf-syntax';

/**
 * SPF analysis and merge (RFC 7208). The audit reads the domain's policy, walks every include and
 * redirect the way a receiver would, counts DNS-querying terms as §4.6.4 does, and proposes the
 * platform's include only when the result is certain to stay a valid policy.
 *
 * Counted (§4.6.4): `include`, `a`, `mx`, `ptr`, `exists` and the `redirect` modifier, in the
 * record and in every record they pull in; `all`, `ip4`, `ip6` and `exp` are not. More than ten is
 * a permerror. More than two "void" lookups (NXDOMAIN or an empty answer) is a permerror too. A
 * `redirect` is ignored when the record has an `all` mechanism (§6.1), so it is neither followed nor
 * counted then.
 */
export const SPF_MAX_LOOKUPS = 10;
export const SPF_MAX_VOID_LOOKUPS = 2;
/** §4.6.4: an `mx` mechanism whose name has more than ten MX records is a permerror. */
export const SPF_MAX_MX_RECORDS = 10;

export type SpfStatus = 'safe_merge' | 'manual_review' | 'unknown';

export interface SpfResult {
  status: SpfStatus;
  lookupCount: number;
  voidLookups: number;
  reasons: string[];
  /** The record to publish in place of the current one (or the new one); only when `safe_merge`. */
  proposed: string | null;
  /** The SPF records found at the domain (more than one is itself a reason for review). */
  observed: string[];
}

const COUNTED = new Set(['include', 'a', 'mx', 'ptr', 'exists']);

export type { ParsedSpf, SpfTerm };

/** Whether a TXT string is meant as an SPF record (§4.5); `parseSpf` says whether it is a valid one. */
export const isSpfRecord = looksLikeSpf;

const hasMacro = (s: string) => s.includes('%');
/** Names a DNS resolver here will send: letters, digits, "-", "_" and dots. */
const HOST_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*\.?$/;

/** Splits a record into terms and checks each against the §12 grammar (`spf-syntax.ts`). */
export const parseSpf = parseSpfRecord;

interface WalkState {
  count: number;
  voids: number;
  reasons: string[];
  /** A definite problem: the policy is malformed, loops, or may break a limit. */
  review: boolean;
  /** A lookup below the top-level record failed (servfail, timeout, budget). */
  nestedFailure: boolean;
  /** Every domain whose SPF record the walk read (to spot an existing platform include). */
  visited: Set<string>;
}

const failure = (a: AuditAnswer<unknown>) => (a.outcome === 'error' ? a.error : null);
const isVoid = (a: AuditAnswer<unknown>) => a.outcome === 'nxdomain' || a.outcome === 'nodata';

function note(state: WalkState, reason: string, review = true) {
  if (!state.reasons.includes(reason)) state.reasons.push(reason);
  if (review) state.review = true;
}

function countLookup(state: WalkState): boolean {
  state.count++;
  if (state.count > SPF_MAX_LOOKUPS) {
    note(state, `the policy needs more than ${SPF_MAX_LOOKUPS} DNS lookups (RFC 7208 §4.6.4)`);
    return false;
  }
  return true;
}

function countVoid(state: WalkState, what: string) {
  state.voids++;
  if (state.voids > SPF_MAX_VOID_LOOKUPS) {
    note(state, `more than ${SPF_MAX_VOID_LOOKUPS} lookups return no answer (void lookups, RFC 7208 §4.6.4); last: ${what}`);
  }
}

/** Reads the SPF record that an include or redirect points at and walks it. */
async function follow(dns: LookupBudget, state: WalkState, target: string, path: string[], via: string): Promise<void> {
  const name = target.toLowerCase().replace(/\.$/, '');
  if (path.includes(name)) {
    note(state, `${via} loops back to ${name} (${[...path, name].join(' → ')})`);
    return;
  }
  const answer = await dns.txt(name);
  const failed = failure(answer);
  if (failed) {
    state.nestedFailure = true;
    note(state, `the TXT lookup for ${name} (${via}) failed: ${failed}`);
    return;
  }
  if (isVoid(answer)) countVoid(state, name);
  const spf = answer.records.filter(isSpfRecord);
  if (spf.length === 0) {
    note(state, `${via} points at ${name}, which has no SPF record (a permerror)`);
    return;
  }
  if (spf.length > 1) {
    note(state, `${name} (${via}) publishes ${spf.length} SPF records (a permerror)`);
    return;
  }
  await walk(dns, state, name, spf[0], [...path, name]);
}

async function walk(dns: LookupBudget, state: WalkState, domain: string, record: string, path: string[]): Promise<void> {
  state.visited.add(domain);
  const parsed = parseSpf(record);
  for (const e of parsed.errors) note(state, `${domain}: malformed SPF policy: ${e}`);
  const hasAll = parsed.terms.some((t) => t.kind === 'mechanism' && t.name === 'all');

  for (const term of parsed.terms) {
    if (term.kind === 'modifier') continue;
    if (!COUNTED.has(term.name)) continue;
    if (!countLookup(state)) return;
    const target = term.domain ?? domain;
    if (hasMacro(target)) {
      note(state, `${domain}: "${term.raw}" uses a macro, which the audit cannot evaluate`);
      continue;
    }
    if (!HOST_NAME.test(target) && term.name !== 'ptr') {
      // Valid SPF syntax (a domain-spec may hold ":" or "/"), but no name a resolver here can ask
      // for: the audit counts it as a void lookup, as a receiver's NXDOMAIN (decision 0100).
      countVoid(state, target);
      if (term.name === 'include')
        note(state, `${domain}: "${term.raw}" names no domain that can hold an SPF record (a permerror)`);
      else note(state, `${domain}: "${term.raw}" names ${target}, which is not a host name; counted as a void lookup`, false);
      continue;
    }
    if (term.name === 'include') {
      await follow(dns, state, target, path, `include:${target}`);
      continue;
    }
    if (term.name === 'ptr') {
      note(state, `${domain}: "${term.raw}" uses ptr, which RFC 7208 §5.5 says not to use`, false);
      continue;
    }
    if (term.name === 'mx') {
      const answer = await dns.mx(target);
      const failed = failure(answer);
      if (failed) {
        state.nestedFailure = true;
        note(state, `the MX lookup for ${target} failed: ${failed}`);
      } else if (isVoid(answer)) countVoid(state, target);
      else if (answer.records.length > SPF_MAX_MX_RECORDS) {
        note(state, `${target} has more than ${SPF_MAX_MX_RECORDS} MX records, so "${term.raw}" is a permerror`);
      }
      continue;
    }
    // a and exists resolve addresses.
    const answer = await dns.address(target, 'A');
    const failed = failure(answer);
    if (failed) {
      state.nestedFailure = true;
      note(state, `the A lookup for ${target} failed: ${failed}`);
    } else if (isVoid(answer)) {
      if (term.name === 'a') {
        const v6 = await dns.address(target, 'AAAA');
        if (failure(v6)) {
          state.nestedFailure = true;
          note(state, `the AAAA lookup for ${target} failed: ${failure(v6)}`);
        } else if (isVoid(v6)) countVoid(state, target);
      } else countVoid(state, target);
    }
  }

  const redirect = parsed.terms.find((t) => t.kind === 'modifier' && t.name === 'redirect');
  if (redirect && redirect.kind === 'modifier') {
    if (hasAll) {
      note(state, `${domain}: the redirect modifier is ignored because the record has an "all" mechanism (RFC 7208 §6.1)`, false);
      return;
    }
    if (!countLookup(state)) return;
    if (hasMacro(redirect.value)) {
      note(state, `${domain}: "${redirect.raw}" uses a macro, which the audit cannot evaluate`);
      return;
    }
    await follow(dns, state, redirect.value, path, `redirect=${redirect.value}`);
  }
}

/**
 * Inserts `include:<platform>` before the terminal `all` mechanism or the `redirect` modifier
 * (whichever comes first), else at the end; every other term keeps its place and spelling.
 */
export function mergeSpf(record: string, platformDomain: string): string {
  const tokens = record.trim().split(/\s+/);
  const include = `include:${platformDomain}`;
  const at = tokens.findIndex((t, i) => i > 0 && (/^[+\-~?]?all$/i.test(t) || /^redirect=/i.test(t)));
  if (at < 0) return [...tokens, include].join(' ');
  return [...tokens.slice(0, at), include, ...tokens.slice(at)].join(' ');
}

/** The qualifier of a new record's `all` when the domain publishes none: soft fail while migrating. */
export const NEW_RECORD_ALL = '~all';

export async function analyzeSpf(dns: LookupBudget, domain: string, platformDomain: string): Promise<SpfResult> {
  const platform = platformDomain.toLowerCase();
  const top = await dns.txt(domain);
  const failed = failure(top);
  if (failed) {
    return {
      status: 'unknown',
      lookupCount: 0,
      voidLookups: 0,
      reasons: [`the TXT lookup for ${domain} failed (${failed}); the current policy is unknown, so nothing is proposed`],
      proposed: null,
      observed: [],
    };
  }
  const observed = top.records.filter(isSpfRecord);
  const state: WalkState = { count: 0, voids: 0, reasons: [], review: false, nestedFailure: false, visited: new Set() };

  if (observed.length > 1) {
    note(
      state,
      `${domain} publishes ${observed.length} SPF records; RFC 7208 §4.5 makes that a permerror, so they must be combined by hand`,
    );
    return { status: 'manual_review', lookupCount: 0, voidLookups: 0, reasons: state.reasons, proposed: null, observed };
  }

  // The platform's own include costs one lookup plus whatever its record needs.
  const platformState: WalkState = { count: 1, voids: 0, reasons: [], review: false, nestedFailure: false, visited: new Set() };
  const platformWalk = follow(dns, platformState, platform, [], `include:${platform}`);

  if (observed.length === 1) await walk(dns, state, domain, observed[0], [domain]);
  await platformWalk;

  const lookupCount = state.count;
  if (state.nestedFailure) note(state, 'a lookup failed, so the lookup count may be incomplete; nothing is proposed');
  if (state.review || state.nestedFailure) {
    return { status: 'manual_review', lookupCount, voidLookups: state.voids, reasons: state.reasons, proposed: null, observed };
  }
  if (platformState.nestedFailure || platformState.review) {
    note(state, `the platform's SPF record at ${platform} could not be checked: ${platformState.reasons.join('; ')}`);
    return { status: 'manual_review', lookupCount, voidLookups: state.voids, reasons: state.reasons, proposed: null, observed };
  }

  if (observed.length === 0) {
    note(state, `${domain} publishes no SPF record; the proposal is a new one that authorizes the platform`, false);
    return {
      status: 'safe_merge',
      lookupCount,
      voidLookups: state.voids,
      reasons: state.reasons,
      proposed: `v=spf1 include:${platform} ${NEW_RECORD_ALL}`,
      observed,
    };
  }
  if (state.visited.has(platform)) {
    note(state, `the policy already includes ${platform}; it needs no change`, false);
    return {
      status: 'safe_merge',
      lookupCount,
      voidLookups: state.voids,
      reasons: state.reasons,
      proposed: observed[0].trim(),
      observed,
    };
  }
  const merged = lookupCount + platformState.count;
  if (merged > SPF_MAX_LOOKUPS) {
    note(state, `adding include:${platform} would bring the policy to ${merged} DNS lookups, above ${SPF_MAX_LOOKUPS}`);
    return { status: 'manual_review', lookupCount, voidLookups: state.voids, reasons: state.reasons, proposed: null, observed };
  }
  note(state, `adding include:${platform} keeps the policy at ${merged} of ${SPF_MAX_LOOKUPS} DNS lookups`, false);
  return {
    status: 'safe_merge',
    lookupCount,
    voidLookups: state.voids,
    reasons: state.reasons,
    proposed: mergeSpf(observed[0], platform),
    observed,
  };
}
