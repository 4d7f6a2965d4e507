import { z } from 'zod';
import { queryInt } from '../../core/query-int';
import { route } from '../../core/rest-route';
import { IDEMPOTENCY_KEY } from './checkouts';
import { CURRENCIES, FUNDING_MODES, PRODUCTS } from './model';
import { MAX_TOP_UP_CREDITS } from './pricing';
import { USAGE_LIMIT } from './service';

/** Spec 4.4: the AI-credit routes, one GraphQL operation each (documents in `operations/`). */
export const PREFIX = '/api/v1/billing/ai-credits';
const tag = 'AI credits';

export const billingRoutes = [
  route({
    method: 'GET',
    path: PREFIX,
    summary: 'AI-credit balance of the billing owner',
    tag,
    operation: 'get-ai-credits',
    select: (d) => d.aiCreditBalance,
    status: 200,
    envelope: 'standard',
    scope: 'billing:read',
  }),
  route({
    method: 'GET',
    path: `${PREFIX}/usage`,
    summary: 'Usage entries, newest first; filters product, from, to, source',
    tag,
    operation: 'list-ai-credit-usage',
    query: z
      .object({
        product: z.enum(PRODUCTS).optional(),
        // A date or an RFC 3339 timestamp; `from` must be before `to` (else 400).
        from: z.union([z.string().date(), z.string().datetime({ offset: true })]).optional(),
        to: z.union([z.string().date(), z.string().datetime({ offset: true })]).optional(),
        source: z.string().optional(),
        limit: queryInt(USAGE_LIMIT.min, USAGE_LIMIT.max).optional(),
        cursor: z.string().optional(),
      })
      .strict(),
    derive: { query: '.' },
    select: (d) => d.aiCreditUsage,
    status: 200,
    envelope: 'standard',
    scope: 'billing:read',
  }),
  route({
    method: 'POST',
    path: `${PREFIX}/top-ups/quote`,
    summary: 'Quote a top-up',
    tag,
    operation: 'create-ai-credit-quote',
    body: z.object({ credits: z.number().int().min(1).max(MAX_TOP_UP_CREDITS), currency: z.enum(CURRENCIES) }).strict(),
    derive: { body: '.' },
    select: (d) => d.createAiCreditQuote,
    status: 201,
    envelope: 'standard',
    scope: 'billing:write',
  }),
  route({
    method: 'POST',
    path: `${PREFIX}/top-ups/checkout`,
    summary: 'Check a quote out through a payment provider (exactly once per idempotency key)',
    tag,
    operation: 'create-ai-credit-checkout',
    body: z
      .object({ quote_id: z.string(), idempotency_key: z.string().regex(IDEMPOTENCY_KEY), provider: z.enum(['test']) })
      .strict(),
    // 404 unknown quote, 409 quote or key already used otherwise, 410 quote expired.
    errors: [404, 409, 410],
    derive: { body: '.' },
    select: (d) => d.createAiCreditCheckout,
    status: 201,
    envelope: 'standard',
    scope: 'billing:write',
  }),
  route({
    method: 'GET',
    path: `${PREFIX}/funding`,
    summary: 'Funding preference per product',
    tag,
    operation: 'get-ai-credit-funding',
    select: (d) => d.aiCreditFunding,
    status: 200,
    envelope: 'standard',
    scope: 'billing:read',
  }),
  route({
    method: 'PUT',
    path: `${PREFIX}/funding`,
    summary: 'Set the funding preference of one product',
    tag,
    operation: 'set-ai-credit-funding',
    body: z.object({ product: z.enum(PRODUCTS), mode: z.enum(FUNDING_MODES) }).strict(),
    derive: { body: '.' },
    select: (d) => d.setAiCreditFunding,
    status: 200,
    envelope: 'standard',
    scope: 'billing:write',
  }),
];
