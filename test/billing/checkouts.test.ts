import Fastify, { type FastifyInstance } from 'fastify';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Connection } from 'mongoose';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import { Ports } from '../../core/ports';
import type { Principal } from '../../core/principal';
import { Checkouts } from '../../subgraphs/billing/checkouts';
import { Funding } from '../../subgraphs/billing/funding';
import { Ledger } from '../../subgraphs/billing/ledger';
import { billingModels } from '../../subgraphs/billing/model';
import { DEV_WEBHOOK_SECRET, TestPaymentProvider } from '../../subgraphs/billing/payment-provider';
import { BillingService } from '../../subgraphs/billing/service';
import { startPaymentProviderStandIn } from '../../subgraphs/billing/stand-in/payment-provider';
import { buildBillingSubgraph } from '../../subgraphs/billing';
import { WEBHOOK_PATH, paymentWebhooks } from '../../subgraphs/billing/webhooks';

/** The checkout flow against the real MongoDB-wire server, the stand-in and a real webhook listener. */
const base = process.env.MONGODB_URI ?? 'mongodb://127.0.0.1:27017/platform';
let conn: Connection;
let standIn: { url: string; stop(): Promise<void> };
let app: FastifyInstance;
let billing: BillingService;

const owner = (): Principal => ({
  accountId: randomUUID(),
  accountSlug: 'a',
  plan: 'free',
  keyId: 'k',
  role: 'owner',
  scopes: [],
});

beforeAll(async () => {
  conn = await connectMongo(base.replace(/\/[^/?]*(\?|$)/, `/t_checkout_${randomBytes(4).toString('hex')}$1`));
  const models = billingModels(conn);
  await ensureIndexes(conn);
  standIn = await startPaymentProviderStandIn({ mongodbUri: base, host: '127.0.0.1' });
  app = Fastify();
  let webhookBase = '';
  const ledger = new Ledger(models);
  const test = new TestPaymentProvider(() => standIn.url, DEV_WEBHOOK_SECRET);
  const checkouts = new Checkouts(models, ledger, new Map([['test', test]]), (p) => `${webhookBase}${WEBHOOK_PATH}/${p}`);
  billing = new BillingService(models, ledger, checkouts, new Funding(models), new Ports(), test);
  await paymentWebhooks(app, billing);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  webhookBase = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
});
afterAll(async () => {
  await app.close();
  await standIn.stop();
  await conn.dropDatabase();
  await conn.close();
});

test('the subgraph builds', async () => {
  const built = await buildBillingSubgraph(billing);
  expect(built.sdl).toContain('aiCreditBalance');
});

test('quote → checkout → completed twice (and concurrently) credits once', async () => {
  const p = owner();
  const quote = await billing.quote(p, 500, 'NGN');
  expect(quote.amountMinor).toBe(500 * 1500);
  const key = randomUUID();
  const [a, b] = await Promise.all([
    billing.checkout(p, { quoteId: quote._id, idempotencyKey: key, provider: 'test' }),
    billing.checkout(p, { quoteId: quote._id, idempotencyKey: key, provider: 'test' }),
  ]);
  expect(a._id).toBe(b._id);
  expect(a.paymentUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/pay\/pay_/);
  await expect(billing.checkout(p, { quoteId: quote._id, idempotencyKey: randomUUID(), provider: 'test' })).rejects.toMatchObject(
    {
      code: 'quote_already_used',
      status: 409,
    },
  );
  const other = await billing.quote(p, 10, 'USD');
  await expect(billing.checkout(p, { quoteId: other._id, idempotencyKey: key, provider: 'test' })).rejects.toMatchObject({
    code: 'idempotency_conflict',
    status: 409,
  });
  await expect(billing.checkout(p, { quoteId: other._id, idempotencyKey: 'k2', provider: 'paypal' })).rejects.toMatchObject({
    status: 400,
  });
  const done = await Promise.all([billing.completePayment(a._id), billing.completePayment(a._id)]);
  expect(done.map((c) => c.status)).toEqual(['paid', 'paid']);
  await billing.completePayment(a._id);
  const balance = await billing.balance(p);
  expect(balance.topUpsThisPeriod).toBe(500);
  expect(balance.available).toBe(600);
});

test('a bad signature changes nothing', async () => {
  const res = await fetch(`http://127.0.0.1:${(app.server.address() as { port: number }).port}${WEBHOOK_PATH}/test`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'webhook-id': 'x',
      'webhook-timestamp': `${Math.floor(Date.now() / 1000)}`,
      'webhook-signature': 'v1,AAAA',
    },
    body: JSON.stringify({ type: 'payment.succeeded', data: {} }),
  });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe('invalid_signature');
});
