import type { FastifyInstance } from 'fastify';
import { isPlatformError } from '../../core/errors';
import type { BillingService } from './service';
import { checkoutJson } from './views';

/** Where payment providers deliver their webhooks (`{provider}` is the checkout's provider name). */
export const WEBHOOK_PATH = '/api/v1/billing/webhooks/payments';

/**
 * The inbound payment webhook, on the bridge's listener but outside GraphQL: the signature covers
 * the exact raw body, so the body is kept as the string that arrived and verified before parsing.
 */
export function paymentWebhooks(app: FastifyInstance, billing: BillingService): Promise<void> | void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, body));
    scope.post<{ Params: { provider: string } }>(`${WEBHOOK_PATH}/:provider`, async (req, reply) => {
      const raw = typeof req.body === 'string' ? req.body : '';
      try {
        const { handled, checkout } = await billing.checkouts.confirm(req.params.provider, raw, req.headers);
        return reply.code(200).send({ success: true, data: { handled, checkout: checkout ? checkoutJson(checkout) : null } });
      } catch (e) {
        if (!isPlatformError(e)) throw e;
        return reply.code(e.status).send({ success: false, error: { code: e.code, message: e.message, details: e.details } });
      }
    });
  });
}
