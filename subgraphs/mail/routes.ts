import { z } from 'zod';
import { type AnyRoute, route, type RouteRequest } from '../../core/rest-route';
import { STEP_IDS } from './migration';

/**
 * Spec 4.8 mail routes, each onto one GraphQL operation. The three public routes live under
 * `/api/v1/mail/`, the authenticated ones under `/v1/mail/` (spec 1.1). JSON is camelCase.
 */
const PUBLIC = '/api/v1/mail';
const tag = 'Mail';

/** Query values arrive as a string, or an array when repeated: a repeated list joins with commas. */
const text = z.union([z.string(), z.array(z.string())]).optional();
const asText = (v: string | string[] | undefined): string | null => (v === undefined ? null : Array.isArray(v) ? v.join(',') : v);
// Spec 7.6 names the codes of a bad domain, selector list, download flag or provider
// (`invalid_domain`, `invalid_selectors`, `invalid_audit`, `invalid_provider`): the service checks
// them, so the query stays loose here (decision 0007 lists these 400s as per-operation exceptions).
const auditQuery = z.object({ domain: text, selectors: text, download: text }).passthrough();
const planQuery = auditQuery.extend({ provider: text });
const checklistQuery = z.object({ domain: text, provider: text }).passthrough();
const checklistBody = z
  .object({
    domain: z.string().min(1).max(1024),
    provider: z.string().min(1).max(64),
    completed: z.array(z.string().max(64)).max(STEP_IDS.length * 2),
    revision: z.number().int().min(0),
  })
  .strict();

/**
 * The caller's address for the per-IP rate limit: the bridge's own view of the connection, never a
 * header the client could set (`X-Forwarded-For` is spoofable).
 */
const clientIp = (req: RouteRequest<unknown, unknown>): string => req.ip || 'unknown';

/** Carries the attachment name from `select` to `headers` without putting it in the JSON. */
const DOWNLOAD = Symbol('download');
type WithDownload = Record<string | symbol, unknown>;

function withoutDownloadName(value: unknown): WithDownload {
  const { downloadName, ...rest } = value as WithDownload & { downloadName?: string | null };
  const out = rest as WithDownload;
  if (downloadName) out[DOWNLOAD] = downloadName;
  return out;
}

const attachmentHeaders = (payload: unknown): Record<string, string> => {
  const name = (payload as WithDownload)?.[DOWNLOAD];
  return typeof name === 'string' ? { 'Content-Disposition': `attachment; filename="${name}"` } : {};
};

export const mailRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${PUBLIC}/audit`,
    summary: 'Public domain audit: SPF (with a merge proposal), DMARC, MX, DKIM and return-path; no authentication',
    tag,
    operation: 'mail-audit',
    public: true,
    query: auditQuery,
    variables: (r) => ({
      domain: asText(r.query.domain) ?? '',
      selectors: asText(r.query.selectors),
      download: asText(r.query.download),
      clientIp: clientIp(r),
    }),
    select: (d) => withoutDownloadName(d.mailAudit),
    headers: attachmentHeaders,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${PUBLIC}/migration-plan`,
    summary: 'Public migration plan: the audit plus the provider guide, steps, rollback and examples; no authentication',
    tag,
    operation: 'mail-migration-plan',
    public: true,
    query: planQuery,
    variables: (r) => ({
      domain: asText(r.query.domain) ?? '',
      provider: asText(r.query.provider) ?? '',
      selectors: asText(r.query.selectors),
      download: asText(r.query.download),
      clientIp: clientIp(r),
    }),
    select: (d) => withoutDownloadName(d.mailMigrationPlan),
    headers: attachmentHeaders,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${PUBLIC}/migration-guides`,
    summary: 'Every provider migration guide; no authentication',
    tag,
    operation: 'mail-migration-guides',
    public: true,
    select: (d) => d.mailMigrationGuides,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: '/v1/mail/migration/checklist',
    summary: 'The workspace migration checklist for a domain and provider (live keys only)',
    tag,
    operation: 'mail-migration-checklist',
    query: checklistQuery,
    variables: (r) => ({ domain: asText(r.query.domain) ?? '', provider: asText(r.query.provider) ?? '' }),
    select: (d) => d.mailMigrationChecklist,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PUT',
    path: '/v1/mail/migration/checklist',
    summary: 'Save checklist progress; the revision read must still be current (else 409)',
    tag,
    operation: 'update-mail-migration-checklist',
    body: checklistBody,
    // 409: the revision read is no longer current (spec 7.6).
    errors: [409],
    derive: { body: '.' },
    select: (d) => d.updateMailMigrationChecklist,
    status: 200,
    envelope: 'standard',
  }),
];
