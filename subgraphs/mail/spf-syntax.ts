import { isIPv6 } from 'node:net';

/**
 * RFC 7208 record syntax (§4.5, §4.6, §5, §6, §7, ABNF in §12), checked rule by rule. A record
 * that breaks any rule is a `permerror` for every receiver, so the audit must never propose a
 * merge into it. Only the grammar is checked here; lookups, limits and loops are `spf.ts`'s.
 *
 *     record           = version terms *SP
 *     version          = "v=spf1"
 *     terms            = *( 1*SP ( directive / modifier ) )
 *     directive        = [ qualifier ] mechanism
 *     qualifier        = "+" / "-" / "?" / "~"
 *     mechanism        = all / include / a / mx / ptr / ip4 / ip6 / exists
 *     modifier         = redirect / explanation / unknown-modifier
 *     unknown-modifier = name "=" macro-string
 *     name             = ALPHA *( ALPHA / DIGIT / "-" / "_" / "." )
 *     domain-spec      = macro-string domain-end
 *     domain-end       = ( "." toplabel [ "." ] ) / macro-expand
 *     toplabel         = ( *alphanum ALPHA *alphanum ) / ( 1*alphanum "-" *( alphanum / "-" ) alphanum )
 *     macro-string     = *( macro-expand / macro-literal )
 *     macro-expand     = ( "%{" macro-letter transformers *delimiter "}" ) / "%%" / "%_" / "%-"
 *     macro-literal    = %x21-24 / %x26-7E
 *     dual-cidr-length = [ ip4-cidr-length ] [ "/" ip6-cidr-length ]
 *
 * ABNF string literals are case-insensitive, so `V=SPF1`, `ALL` and `%{D}` are valid.
 */

export type SpfMechanismName = 'all' | 'include' | 'a' | 'mx' | 'ptr' | 'ip4' | 'ip6' | 'exists';

export type SpfTerm =
  | {
      kind: 'mechanism';
      raw: string;
      qualifier: '+' | '-' | '~' | '?';
      name: SpfMechanismName;
      /** The domain-spec (a, mx, ptr, include, exists) or the network (ip4, ip6); null when absent. */
      domain: string | null;
      /** The CIDR suffix as written (`/24`, `//64`, `/24//64`); null when absent. */
      cidr: string | null;
      ip4Cidr: number | null;
      ip6Cidr: number | null;
    }
  | { kind: 'modifier'; raw: string; name: string; value: string };

export interface ParsedSpf {
  terms: SpfTerm[];
  /** Syntax errors, each one sentence; any error makes the record a permerror. */
  errors: string[];
}

export type MacroToken =
  | { kind: 'literal'; text: string }
  | { kind: 'escape'; text: '%%' | '%_' | '%-' }
  | { kind: 'macro'; raw: string; letter: string; digits: number | null; reverse: boolean; delimiters: string };

const MECHANISMS = new Set<string>(['all', 'include', 'a', 'mx', 'ptr', 'ip4', 'ip6', 'exists']);
const MACRO_LETTERS = 'slodiphcrtv';
/** §7.2: `c`, `r` and `t` are allowed only in explanation text, never in a domain-spec. */
const EXP_ONLY_LETTERS = 'crt';
const DELIMITERS = '.-+,/_=';
const NAME = /^[A-Za-z][A-Za-z0-9\-_.]*$/;
const TOPLABEL = /^(?:[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*|[A-Za-z0-9]+-[A-Za-z0-9-]*[A-Za-z0-9])$/;
const QNUM = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9][0-9]|[0-9])';
const IP4_NETWORK = new RegExp(`^${QNUM}\\.${QNUM}\\.${QNUM}\\.${QNUM}$`);
/** ip4-cidr-length digits: "0" / %x31-39 0*1DIGIT (no leading zero); ip6: up to three digits. */
const IP4_CIDR_DIGITS = /^(?:0|[1-9][0-9]?)$/;
const IP6_CIDR_DIGITS = /^(?:0|[1-9][0-9]{0,2})$/;

/** Whether a TXT string is meant as an SPF record (§4.5); the parser then says whether it is valid. */
export function looksLikeSpf(txt: string): boolean {
  return /^v=spf1(\s|$)/i.test(txt.trim());
}

/**
 * Tokenizes a macro-string (§7.1). Returns the tokens or the first error. `%` must start a
 * macro-expand; every other character must be a macro-literal (visible ASCII, no space).
 */
export function tokenizeMacroString(s: string): { tokens: MacroToken[]; error: string | null } {
  const tokens: MacroToken[] = [];
  let literal = '';
  const flush = () => {
    if (literal) tokens.push({ kind: 'literal', text: literal });
    literal = '';
  };
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch !== '%') {
      const code = ch.charCodeAt(0);
      if (code < 0x21 || code > 0x7e) {
        const shown = code < 0x20 || code === 0x7f ? `control character 0x${code.toString(16).padStart(2, '0')}` : `"${ch}"`;
        return { tokens, error: `${shown} is not allowed in a macro-string` };
      }
      literal += ch;
      continue;
    }
    const next = s[i + 1];
    if (next === '%' || next === '_' || next === '-') {
      flush();
      tokens.push({ kind: 'escape', text: `%${next}` as '%%' | '%_' | '%-' });
      i++;
      continue;
    }
    if (next !== '{') return { tokens, error: `"%${next ?? ''}" is not a macro (use %{…}, %%, %_ or %-)` };
    const close = s.indexOf('}', i + 2);
    if (close < 0) return { tokens, error: 'a macro "%{" is not closed by "}"' };
    const inner = s.slice(i + 2, close);
    const m = /^([A-Za-z])([0-9]*)([rR]?)(.*)$/.exec(inner);
    if (!m || !MACRO_LETTERS.includes(m[1].toLowerCase())) {
      return { tokens, error: `"%{${inner}}" has an unknown macro letter (RFC 7208 §7.2: one of ${MACRO_LETTERS})` };
    }
    const [, letter, digits, reverse, delimiters] = m;
    if ([...delimiters].some((d) => !DELIMITERS.includes(d))) {
      return { tokens, error: `"%{${inner}}" has an unknown transformer or delimiter (RFC 7208 §7.1)` };
    }
    // §7.3: a digit transformer, when given, must be nonzero.
    if (digits && Number(digits) === 0) return { tokens, error: `"%{${inner}}" keeps zero labels (RFC 7208 §7.3)` };
    flush();
    tokens.push({
      kind: 'macro',
      raw: `%{${inner}}`,
      letter,
      digits: digits ? Number(digits) : null,
      reverse: reverse !== '',
      delimiters,
    });
    i = close;
  }
  flush();
  return { tokens, error: null };
}

/** Checks a macro-string (an unknown modifier's value). */
export function checkMacroString(s: string): string | null {
  return tokenizeMacroString(s).error;
}

/**
 * Checks a domain-spec (§7.1 / §12). Returns null when valid, else why not. Besides the grammar,
 * the explanation-only letters `c`, `r`, `t` are refused (§7.2), and the domain-end macro must be a
 * `%{…}` expansion: `%%`, `%_` and `%-` expand to a percent sign, a space and `%20`, which never
 * end a domain name (see docs/decisions/0100-spf-grammar.md).
 */
export function checkDomainSpec(s: string): string | null {
  if (s === '') return 'the domain-spec is empty';
  const { tokens, error } = tokenizeMacroString(s);
  if (error) return error;
  for (const t of tokens) {
    if (t.kind === 'macro' && EXP_ONLY_LETTERS.includes(t.letter.toLowerCase())) {
      return `"${t.raw}" uses a macro letter allowed only in explanation text (RFC 7208 §7.2)`;
    }
  }
  const last = tokens[tokens.length - 1];
  if (last.kind === 'macro') return null;
  if (last.kind === 'escape') return `the domain-spec ends in "${last.text}", which does not end a domain name`;
  // domain-end = "." toplabel [ "." ], all inside the trailing literal.
  const text = last.text.endsWith('.') ? last.text.slice(0, -1) : last.text;
  const dot = text.lastIndexOf('.');
  if (dot < 0) return 'the domain-spec does not end in "." and a top label, nor in a macro';
  const top = text.slice(dot + 1);
  if (!TOPLABEL.test(top)) {
    if (top === '') return 'the domain-spec has an empty top label';
    if (/^[0-9]+$/.test(top)) return `the top label "${top}" is all digits (RFC 7208 §7.1 toplabel)`;
    if (top.startsWith('-') || top.endsWith('-'))
      return `the top label "${top}" starts or ends with a dash (RFC 7208 §7.1 toplabel)`;
    return `the top label "${top}" is not a valid top label (RFC 7208 §7.1 toplabel)`;
  }
  return null;
}

/** Parses dual-cidr-length (`/24`, `//64`, `/24//64`); null when the text is not one. */
function parseDualCidr(s: string): { ip4: number | null; ip6: number | null; error: string | null } | null {
  const m = /^(?:\/([0-9]+))?(?:\/\/([0-9]+))?$/.exec(s);
  if (!m || (m[1] === undefined && m[2] === undefined)) return null;
  const ip4 = m[1] === undefined ? null : Number(m[1]);
  const ip6 = m[2] === undefined ? null : Number(m[2]);
  if (m[1] !== undefined && (!IP4_CIDR_DIGITS.test(m[1]) || (ip4 as number) > 32)) {
    return { ip4, ip6, error: `bad IPv4 CIDR length "/${m[1]}" (0 to 32, no leading zero)` };
  }
  if (m[2] !== undefined && (!IP6_CIDR_DIGITS.test(m[2]) || (ip6 as number) > 128)) {
    return { ip4, ip6, error: `bad IPv6 CIDR length "//${m[2]}" (0 to 128, no leading zero)` };
  }
  return { ip4, ip6, error: null };
}

/** Splits `domain-spec [ dual-cidr-length ]`: the CIDR is the longest suffix that is one (a domain-spec never ends in "/digits"). */
function splitDomainAndCidr(s: string): { domain: string; cidr: string | null } {
  const m = /(?:\/[0-9]+)?(?:\/\/[0-9]+)?$/.exec(s);
  if (!m || m[0] === '') return { domain: s, cidr: null };
  return { domain: s.slice(0, m.index), cidr: m[0] };
}

function parseDirective(raw: string): { term?: SpfTerm; error?: string } {
  const qualifier = '+-~?'.includes(raw[0]) ? (raw[0] as '+' | '-' | '~' | '?') : '+';
  const body = qualifier === raw[0] ? raw.slice(1) : raw;
  const nameMatch = /^[A-Za-z0-9]+/.exec(body);
  const name = nameMatch?.[0].toLowerCase() ?? '';
  const rest = body.slice(name.length);
  if (!MECHANISMS.has(name) || (rest !== '' && rest[0] !== ':' && rest[0] !== '/')) {
    return { error: `"${raw}" is not a known mechanism` };
  }
  const mech = name as SpfMechanismName;
  const term = (domain: string | null, cidr: string | null, ip4Cidr: number | null = null, ip6Cidr: number | null = null) => ({
    term: { kind: 'mechanism' as const, raw, qualifier, name: mech, domain, cidr, ip4Cidr, ip6Cidr },
  });
  const fail = (why: string) => ({ error: `"${raw}": ${why}` });
  switch (mech) {
    case 'all':
      return rest === '' ? term(null, null) : fail('all takes no argument');
    case 'include':
    case 'exists': {
      if (rest === '' || rest === ':') return fail(`${mech} needs a domain`);
      if (rest[0] !== ':') return fail(`${mech} takes no CIDR length`);
      const spec = rest.slice(1);
      const err = checkDomainSpec(spec);
      return err ? fail(err) : term(spec, null);
    }
    case 'ptr': {
      if (rest === '') return term(null, null);
      if (rest[0] !== ':') return fail('ptr takes no CIDR length');
      const err = checkDomainSpec(rest.slice(1));
      return err ? fail(err) : term(rest.slice(1), null);
    }
    case 'a':
    case 'mx': {
      if (rest === '') return term(null, null);
      let domain: string | null = null;
      let cidr: string | null = rest;
      if (rest[0] === ':') {
        const split = splitDomainAndCidr(rest.slice(1));
        domain = split.domain;
        cidr = split.cidr;
        const err = checkDomainSpec(domain);
        if (err) return fail(err);
      }
      if (cidr === null) return term(domain, null);
      const dual = parseDualCidr(cidr);
      if (!dual) return fail(`bad CIDR length "${cidr}"`);
      if (dual.error) return fail(dual.error);
      return term(domain, cidr, dual.ip4, dual.ip6);
    }
    case 'ip4':
    case 'ip6': {
      if (rest[0] !== ':') return fail(`${mech} needs a network`);
      const value = rest.slice(1);
      const slash = value.indexOf('/');
      const network = slash < 0 ? value : value.slice(0, slash);
      const cidr = slash < 0 ? null : value.slice(slash);
      if (mech === 'ip4') {
        if (!IP4_NETWORK.test(network)) return fail(`"${network}" is not an IPv4 address`);
        if (cidr === null) return term(network, null);
        const digits = cidr.slice(1);
        if (!IP4_CIDR_DIGITS.test(digits) || Number(digits) > 32) return fail(`bad IPv4 CIDR length "${cidr}"`);
        return term(network, cidr, Number(digits));
      }
      // RFC 4291 §2.2 text forms (Node's parser), without a zone index.
      if (network.includes('%') || !isIPv6(network)) return fail(`"${network}" is not an IPv6 address`);
      if (cidr === null) return term(network, null);
      const digits = cidr.slice(1);
      if (!IP6_CIDR_DIGITS.test(digits) || Number(digits) > 128) return fail(`bad IPv6 CIDR length "${cidr}"`);
      return term(network, cidr, null, Number(digits));
    }
  }
}

/** Parses a record against the §12 grammar. */
export function parseSpfRecord(record: string): ParsedSpf {
  const errors: string[] = [];
  const terms: SpfTerm[] = [];
  const version = /^v=spf1(?= |$)/i.exec(record);
  if (!version) {
    if (!looksLikeSpf(record)) return { terms, errors: ['the record does not start with "v=spf1"'] };
    errors.push('the record does not start with "v=spf1" followed by a space (RFC 7208 §4.5, §4.6.1)');
  }
  // §4.6.1: terms are separated by one or more SP (0x20) only; a tab or CR stays inside a term.
  const body = version ? record.slice(version[0].length) : record.trim().replace(/^v=spf1\s?/i, '');
  for (const raw of body.split(' ')) {
    if (raw === '') continue;
    const control = [...raw].find((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);
    if (control) {
      const hex = control.charCodeAt(0).toString(16).padStart(2, '0');
      errors.push(
        `"${JSON.stringify(raw).slice(1, -1)}" holds control character 0x${hex}; terms are separated by spaces only (RFC 7208 §4.6.1)`,
      );
      continue;
    }
    const eq = raw.indexOf('=');
    if (eq > 0 && NAME.test(raw.slice(0, eq))) {
      const name = raw.slice(0, eq).toLowerCase();
      const value = raw.slice(eq + 1);
      const err = name === 'redirect' || name === 'exp' ? checkDomainSpec(value) : checkMacroString(value);
      if (err) errors.push(`"${raw}": ${err}`);
      else terms.push({ kind: 'modifier', raw, name, value });
      continue;
    }
    const { term, error } = parseDirective(raw);
    if (error) errors.push(error);
    else if (term) terms.push(term);
  }
  // §6: redirect and exp each at most once, wherever they appear.
  for (const name of ['redirect', 'exp']) {
    const n = terms.filter((t) => t.kind === 'modifier' && t.name === name).length;
    if (n > 1) errors.push(`the record has more than one ${name} modifier (RFC 7208 §6)`);
  }
  return { terms, errors };
}

export interface MacroContext {
  /** `s`: the sender (local-part@domain). */
  sender: string;
  /** `d`: the domain being checked. */
  domain: string;
  /** `i`: the client address. */
  ip: string;
  /** `h`: the HELO/EHLO name. */
  helo: string;
  /** `p`: the validated client name; "unknown" when not known (RFC 7208 §7.3). */
  validatedName?: string;
  /** `r`: the receiving host's name (explanation text only). */
  receiver?: string;
  /** `t`: the current time in seconds (explanation text only). */
  timestamp?: number;
}

/** The value of one macro letter before transformers (§7.3). */
function letterValue(letter: string, ctx: MacroContext): string {
  const at = ctx.sender.lastIndexOf('@');
  const local = at < 0 ? 'postmaster' : ctx.sender.slice(0, at) || 'postmaster';
  const senderDomain = at < 0 ? ctx.sender : ctx.sender.slice(at + 1);
  const v6 = ctx.ip.includes(':');
  switch (letter) {
    case 's':
      return `${local}@${senderDomain}`;
    case 'l':
      return local;
    case 'o':
      return senderDomain;
    case 'd':
      return ctx.domain;
    case 'i':
      return v6 ? expandIPv6(ctx.ip).split('').join('.') : ctx.ip;
    case 'c':
      return ctx.ip;
    case 'p':
      return ctx.validatedName ?? 'unknown';
    case 'h':
      return ctx.helo;
    case 'r':
      return ctx.receiver ?? 'unknown';
    case 't':
      return String(ctx.timestamp ?? Math.floor(Date.now() / 1000));
    case 'v':
      return v6 ? 'ip6' : 'in-addr';
    default:
      throw new Error(`unknown macro letter ${letter}`);
  }
}

/** The 32 hex nibbles of an IPv6 address. */
function expandIPv6(ip: string): string {
  const [head, tail] = ip.toLowerCase().split('::');
  const parts = (s: string | undefined) => (s ? s.split(':') : []);
  const h = parts(head);
  const t = tail === undefined ? [] : parts(tail);
  const fill = tail === undefined ? [] : Array(8 - h.length - t.length).fill('0');
  return [...h, ...fill, ...t].map((g) => g.padStart(4, '0')).join('');
}

/**
 * Expands a macro-string (§7.3, §7.4). Throws when the string breaks the grammar. Uppercase
 * letters URL-escape their value (§7.3).
 */
export function expandMacroString(s: string, ctx: MacroContext): string {
  const { tokens, error } = tokenizeMacroString(s);
  if (error) throw new Error(error);
  let out = '';
  for (const t of tokens) {
    if (t.kind === 'literal') out += t.text;
    else if (t.kind === 'escape') out += t.text === '%%' ? '%' : t.text === '%_' ? ' ' : '%20';
    else {
      const value = letterValue(t.letter.toLowerCase(), ctx);
      const delims = t.delimiters || '.';
      let parts = value.split(new RegExp(`[${delims.replace(/[-\\\]^]/g, '\\$&')}]`));
      if (t.reverse) parts = parts.reverse();
      if (t.digits !== null && t.digits < parts.length) parts = parts.slice(parts.length - t.digits);
      const joined = parts.join('.');
      out +=
        t.letter !== t.letter.toLowerCase()
          ? encodeURIComponent(joined).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
          : joined;
    }
  }
  return out;
}
