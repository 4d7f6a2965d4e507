import Fastify from 'fastify';
import mongoose, { type Connection } from 'mongoose';
import { randomUUID } from 'node:crypto';
import { closeListener } from '../../../core/http-close';
import { connectMongo, isDuplicateKey } from '../../../core/mongo';
import { DEV_WEBHOOK_SECRET, webhookSigner } from '../payment-provider';

/** The stand-in's own database (docs/contracts.md: stand-ins never use the platform's collections). */
export const STANDIN_DB = 'standin_payments';

interface PaymentDoc {
  _id: string;
  reference: string;
  amountMinor: number;
  currency: string;
  description: string;
  webhookUrl: string;
  status: 'pending' | 'succeeded';
  createdAt: Date;
  paidAt: Date | null;
}

function paymentModel(conn: Connection) {
  const schema = new mongoose.Schema<PaymentDoc>(
    {
      _id: String,
      reference: { type: String, required: true, unique: true },
      amountMinor: Number,
      currency: String,
      description: String,
      webhookUrl: String,
      status: String,
      createdAt: Date,
      paidAt: { type: Date, default: null },
    },
    { versionKey: false, collection: 'payments' },
  );
  return conn.models.Payment ?? conn.model<PaymentDoc>('Payment', schema);
}

const view = (p: PaymentDoc, base: string) => ({
  id: p._id,
  reference: p.reference,
  amount_minor: p.amountMinor,
  currency: p.currency,
  description: p.description,
  status: p.status,
  payment_url: `${base}/pay/${p._id}`,
  created_at: p.createdAt,
  paid_at: p.paidAt,
});

/**
 * A small payment provider: `POST /v1/payments` opens a payment (idempotent by `reference`), a
 * hosted page `/pay/{id}` or `POST /v1/payments/{id}/complete` confirms it, and a confirmation is
 * told to the merchant by a Standard Webhooks-signed `payment.succeeded` POST to the payment's
 * `webhook_url` (the same event id on every redelivery; completing a paid payment redelivers).
 */
export async function startPaymentProviderStandIn(opts: {
  mongodbUri: string;
  host: string;
  port?: number;
  secret?: string;
}): Promise<{ url: string; stop(): Promise<void> }> {
  const conn = await connectMongo(opts.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/${STANDIN_DB}$1`), { maxPoolSize: 5 });
  const Payment = paymentModel(conn);
  await Payment.init();
  const signer = webhookSigner(opts.secret ?? DEV_WEBHOOK_SECRET);
  const app = Fastify({ logger: false });
  let base = '';
  // The hosted page's form posts url-encoded with nothing in it.
  app.addContentTypeParser('application/x-www-form-urlencoded', (_req, _body, done) => done(null, {}));

  async function deliver(p: PaymentDoc): Promise<{ status_code: number | null }> {
    const body = JSON.stringify({ type: 'payment.succeeded', data: view(p, base) });
    const id = `evt_${p._id}`;
    const at = new Date();
    try {
      const res = await fetch(p.webhookUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signer.sign(id, at, body),
        },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      await res.arrayBuffer();
      return { status_code: res.status };
    } catch {
      return { status_code: null };
    }
  }

  async function complete(id: string): Promise<PaymentDoc | null> {
    await Payment.updateOne({ _id: id, status: 'pending' }, { $set: { status: 'succeeded', paidAt: new Date() } });
    return Payment.findById(id).lean<PaymentDoc>();
  }

  app.post('/v1/payments', async (req, reply) => {
    const b = (req.body ?? {}) as Record<string, unknown>;
    if (typeof b.reference !== 'string' || !Number.isInteger(b.amount_minor) || typeof b.webhook_url !== 'string') {
      return reply.code(400).send({ error: 'reference, amount_minor and webhook_url are required' });
    }
    const doc: PaymentDoc = {
      _id: `pay_${randomUUID().replace(/-/g, '')}`,
      reference: b.reference,
      amountMinor: b.amount_minor as number,
      currency: String(b.currency ?? 'USD'),
      description: String(b.description ?? ''),
      webhookUrl: b.webhook_url,
      status: 'pending',
      createdAt: new Date(),
      paidAt: null,
    };
    try {
      await Payment.create(doc);
      return reply.code(201).send(view(doc, base));
    } catch (e) {
      if (!isDuplicateKey(e)) throw e;
      const existing = await Payment.findOne({ reference: b.reference }).lean<PaymentDoc>();
      return reply.code(200).send(view(existing!, base));
    }
  });

  app.get<{ Params: { id: string } }>('/v1/payments/:id', async (req, reply) => {
    const p = await Payment.findById(req.params.id).lean<PaymentDoc>();
    return p ? view(p, base) : reply.code(404).send({ error: 'no such payment' });
  });

  app.post<{ Params: { id: string } }>('/v1/payments/:id/complete', async (req, reply) => {
    const p = await complete(req.params.id);
    if (!p) return reply.code(404).send({ error: 'no such payment' });
    return { payment: view(p, base), delivery: await deliver(p) };
  });

  // The hosted payment page a buyer follows from `payment_url`.
  app.get<{ Params: { id: string } }>('/pay/:id', async (req, reply) => {
    const p = await Payment.findById(req.params.id).lean<PaymentDoc>();
    if (!p) return reply.code(404).type('text/plain').send('no such payment');
    const amount = `${(p.amountMinor / 100).toFixed(2)} ${p.currency}`;
    const action = p.status === 'pending' ? `<form method="post"><button>Pay ${amount}</button></form>` : '<p>Paid.</p>';
    return reply.type('text/html').send(`<!doctype html><title>Payment</title><h1>${amount}</h1>${action}`);
  });
  app.post<{ Params: { id: string } }>('/pay/:id', async (req, reply) => {
    const p = await complete(req.params.id);
    if (!p) return reply.code(404).type('text/plain').send('no such payment');
    await deliver(p);
    return reply.type('text/html').send('<!doctype html><title>Payment</title><p>Paid.</p>');
  });

  await app.listen({ host: opts.host, port: opts.port ?? 0 });
  const addr = app.server.address();
  base = `http://${opts.host}:${typeof addr === 'object' && addr ? addr.port : opts.port}`;
  return {
    url: base,
    async stop() {
      await closeListener(app);
      await conn.close();
    },
  };
}
