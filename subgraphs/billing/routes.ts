import { z } from 'zod';
import { route } from '../../core/rest-route';

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
    variables: () => ({}),
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
        product: z.string().optional(),
        from: z.string().optional(),
        to: z.string().optional(),
        source: z.string().optional(),
        limit: z
          .string()
          .regex(/^\d{1,6}$/, 'a whole number')
          .optional(),
        cursor: z.string().optional(),
      })
      .strict(),
    variables: ({ query }) => ({
      product: query.product,
      from: query.from,
      to: query.to,
      source: query.source,
      limit: query.limit === undefined ? undefined : Number(query.limit),
      cursor: query.cursor,
    }),
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
    body: z.object({ credits: z.number(), currency: z.string() }).strict(),
    variables: ({ body }) => ({ credits: body.credits, currency: body.currency }),
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
    body: z.object({ quote_id: z.string(), idempotency_key: z.string(), provider: z.string() }).strict(),
    variables: ({ body }) => ({ quoteId: body.quote_id, idempotencyKey: body.idempotency_key, provider: body.provider }),
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
    variables: () => ({}),
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
    body: z.object({ product: z.string(), mode: z.string() }).strict(),
    variables: ({ body }) => ({ product: body.product, mode: body.mode }),
    select: (d) => d.setAiCreditFunding,
    status: 200,
    envelope: 'standard',
    scope: 'billing:write',
  }),
];
