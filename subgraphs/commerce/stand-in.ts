import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import mongoose, { type Connection } from 'mongoose';
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { closeListener } from '../../core/http-close';
import { ADMIN_TOKEN_HEADER, APP_KEY_HEADER, STOREFRONT_TOKEN_HEADER } from './platform-client';
import { WEBHOOK_HEADERS, signWebhook } from './webhook-signature';

/**
 * The e-commerce platform stand-in: a small HTTP service that holds stores and answers like a
 * store's admin and storefront APIs, keeps webhook subscriptions and sends signed webhooks, and
 * serves the health endpoints of deployed releases. Its state lives in its own database
 * (`standin_commerce`), never in the platform's collections; tokens are kept only hashed.
 *
 * Protocol (the platform's side is `platform-client.ts`):
 * - `GET  /stores/{domain}/meta.json` → 200 `{domain, name, storefront_api_version}` | 404
 * - `GET  /stores/{domain}/admin/api/shop.json` with `X-Commerce-Access-Token` → 200 | 401
 * - `POST /stores/{domain}/api/graphql` with `X-Commerce-Storefront-Access-Token` → 200 | 401
 * - `POST /stores/{domain}/admin/api/webhooks.json` with `X-Commerce-App-Key` → 201
 * - a store whose domain starts with `rate-limited` answers every store call 429 (`Retry-After: 1`),
 *   one starting with `unavailable` answers 503
 * Control routes (what the CLI drives; a real platform has its own consoles for these):
 * - `POST /_standin/stores {domain}` → `{store_domain, admin_token, storefront_token}` (shown once)
 * - `POST /_standin/stores/{domain}/webhooks {topic}` → `{webhook_id, deliveries}` (signed, sent now)
 * - `POST /_standin/deployments {store_domain, health}` → `{deployment_id, health_url}`
 * - `PUT  /_standin/deployments/{id} {health}`; `GET /_standin/deployments/{id}/health`
 */

export const STANDIN_DATABASE = 'standin_commerce';
export const RATE_LIMITED_PREFIX = 'rate-limited';
/** The storefront API version stores answer with; a store created as `legacy-…` answers an old one. */
export const CURRENT_STOREFRONT_API_VERSION = '2025-07';
export const LEGACY_PREFIX = 'legacy-';
export const LEGACY_STOREFRONT_API_VERSION = '2023-01';
/** A store whose domain starts with this answers every store call 503 (an outage). */
export const UNAVAILABLE_PREFIX = 'unavailable';
export const DEPLOYMENT_HEALTH = ['healthy', 'failing', 'degraded'] as const;
export type DeploymentHealth = (typeof DEPLOYMENT_HEALTH)[number];
/** A webhook delivery to one subscriber waits this long: 5 s. */
const DELIVERY_TIMEOUT_MS = 5_000;
const DOMAIN = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

interface StoreDoc {
  _id: string;
  name: string;
  adminTokenHash: string;
  storefrontTokenHash: string;
  createdAt: Date;
}
interface SubscriptionDoc {
  _id: string;
  domain: string;
  address: string;
  createdAt: Date;
}
interface DeploymentDoc {
  _id: string;
  storeDomain: string | null;
  health: DeploymentHealth;
  createdAt: Date;
}
interface WebhookDoc {
  _id: string;
  domain: string;
  topic: string;
  deliveries: Array<{ address: string; status: number | null; at: Date }>;
  createdAt: Date;
}

function models(conn: Connection) {
  const m = <T>(name: string, schema: mongoose.Schema<T>) =>
    (conn.models[name] as mongoose.Model<T> | undefined) ?? conn.model<T>(name, schema);
  const opts = { versionKey: false as const };
  const subscriptionSchema = new mongoose.Schema<SubscriptionDoc>(
    { _id: String, domain: { type: String, required: true }, address: String, createdAt: Date },
    { ...opts, collection: 'subscriptions' },
  );
  subscriptionSchema.index({ domain: 1 });
  return {
    Store: m(
      'StandInStore',
      new mongoose.Schema<StoreDoc>(
        { _id: String, name: String, adminTokenHash: String, storefrontTokenHash: String, createdAt: Date },
        { ...opts, collection: 'stores' },
      ),
    ),
    Subscription: m('StandInSubscription', subscriptionSchema),
    Deployment: m(
      'StandInDeployment',
      new mongoose.Schema<DeploymentDoc>(
        { _id: String, storeDomain: { type: String, default: null }, health: String, createdAt: Date },
        { ...opts, collection: 'deployments' },
      ),
    ),
    Webhook: m(
      'StandInWebhook',
      new mongoose.Schema<WebhookDoc>(
        { _id: String, domain: String, topic: String, deliveries: [mongoose.Schema.Types.Mixed], createdAt: Date },
        { ...opts, collection: 'webhooks' },
      ),
    ),
  };
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
function sameHash(token: unknown, hash: string): boolean {
  if (typeof token !== 'string' || !token) return false;
  const a = Buffer.from(sha256(token));
  const b = Buffer.from(hash);
  return a.length === b.length && timingSafeEqual(a, b);
}

export interface StandInOptions {
  /** MongoDB address of the platform; the stand-in uses database `standin_commerce` on it. */
  mongodbUri: string;
  /** Key the webhooks are signed with and the app key the hosting platform presents. */
  webhookSecret: string;
  host?: string;
  port?: number;
}

export interface RunningStandIn {
  url: string;
  app: FastifyInstance;
  stop(): Promise<void>;
}

/** The stand-in's database address: the platform's server, database `standin_commerce`. */
export function standInDatabaseUri(mongodbUri: string): string {
  const u = new URL(mongodbUri);
  u.pathname = `/${STANDIN_DATABASE}`;
  return u.toString();
}

export async function startCommerceStandIn(opts: StandInOptions): Promise<RunningStandIn> {
  const conn = await mongoose.createConnection(standInDatabaseUri(opts.mongodbUri), { maxPoolSize: 5 }).asPromise();
  const db = models(conn);
  await Promise.all([db.Store.init(), db.Subscription.init(), db.Deployment.init(), db.Webhook.init()]);
  const app = Fastify({ logger: false, bodyLimit: 64 * 1024 });
  let baseUrl = '';

  const fail = (reply: FastifyReply, status: number, message: string) => reply.status(status).send({ errors: message });

  const storeOf = async (domain: string, reply: FastifyReply): Promise<StoreDoc | null> => {
    if (domain.startsWith(RATE_LIMITED_PREFIX)) {
      reply.header('retry-after', '1');
      await fail(reply, 429, 'Exceeded request limit; retry later');
      return null;
    }
    if (domain.startsWith(UNAVAILABLE_PREFIX)) {
      await fail(reply, 503, 'Service Unavailable');
      return null;
    }
    const store = await db.Store.findById(domain).lean();
    if (!store) await fail(reply, 404, 'Not Found');
    return store;
  };

  app.get<{ Params: { domain: string } }>('/stores/:domain/meta.json', async (req, reply) => {
    const store = await storeOf(req.params.domain, reply);
    if (store) {
      const version = store._id.startsWith(LEGACY_PREFIX) ? LEGACY_STOREFRONT_API_VERSION : CURRENT_STOREFRONT_API_VERSION;
      return { domain: store._id, name: store.name, storefront_api_version: version };
    }
  });

  app.get<{ Params: { domain: string } }>('/stores/:domain/admin/api/shop.json', async (req, reply) => {
    const store = await storeOf(req.params.domain, reply);
    if (!store) return;
    if (!sameHash(req.headers[ADMIN_TOKEN_HEADER], store.adminTokenHash))
      return fail(reply, 401, 'Invalid API key or access token');
    return { shop: { domain: store._id, name: store.name } };
  });

  app.post<{ Params: { domain: string } }>('/stores/:domain/api/graphql', async (req, reply) => {
    const store = await storeOf(req.params.domain, reply);
    if (!store) return;
    if (!sameHash(req.headers[STOREFRONT_TOKEN_HEADER], store.storefrontTokenHash)) return fail(reply, 401, 'Unauthorized');
    return { data: { shop: { name: store.name } } };
  });

  app.post<{ Params: { domain: string }; Body: { webhook?: { address?: string } } }>(
    '/stores/:domain/admin/api/webhooks.json',
    async (req, reply) => {
      const store = await storeOf(req.params.domain, reply);
      if (!store) return;
      if (req.headers[APP_KEY_HEADER] !== opts.webhookSecret) return fail(reply, 401, 'Invalid app key');
      const address = req.body?.webhook?.address;
      if (typeof address !== 'string' || !/^https?:\/\//.test(address)) return fail(reply, 422, 'address is invalid');
      await db.Subscription.updateOne(
        { _id: `${store._id} ${address}` },
        { $setOnInsert: { domain: store._id, address, createdAt: new Date() } },
        { upsert: true },
      );
      return reply.status(201).send({ webhook: { address, topic: '*' } });
    },
  );

  app.post<{ Body: { domain?: string } }>('/_standin/stores', async (req, reply) => {
    const domain = String(req.body?.domain ?? '').toLowerCase();
    if (!DOMAIN.test(domain)) return fail(reply, 422, 'domain must be a domain name');
    const adminToken = `cat_${randomBytes(16).toString('hex')}`;
    const storefrontToken = `cst_${randomBytes(16).toString('hex')}`;
    await db.Store.updateOne(
      { _id: domain },
      {
        $set: { adminTokenHash: sha256(adminToken), storefrontTokenHash: sha256(storefrontToken) },
        $setOnInsert: { name: domain.split('.')[0], createdAt: new Date() },
      },
      { upsert: true },
    );
    return reply.status(201).send({ store_domain: domain, admin_token: adminToken, storefront_token: storefrontToken });
  });

  app.post<{ Params: { domain: string }; Body: { topic?: string; payload?: unknown } }>(
    '/_standin/stores/:domain/webhooks',
    async (req, reply) => {
      const domain = req.params.domain;
      const store = await db.Store.findById(domain).lean();
      if (!store) return fail(reply, 404, 'Not Found');
      const topic = String(req.body?.topic ?? '');
      if (!/^[a-z_]+\/[a-z_]+$/.test(topic)) return fail(reply, 422, 'topic must look like orders/create');
      const webhookId = randomUUID();
      const timestamp = Math.floor(Date.now() / 1000);
      const raw = JSON.stringify({
        id: webhookId,
        topic,
        shop_domain: domain,
        created_at: new Date().toISOString(),
        payload: req.body?.payload ?? { id: Math.floor(Math.random() * 1e9) },
      });
      const subs = await db.Subscription.find({ domain }).lean();
      const deliveries = await Promise.all(
        subs.map(async (s) => {
          try {
            const res = await fetch(s.address, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                [WEBHOOK_HEADERS.id]: webhookId,
                [WEBHOOK_HEADERS.timestamp]: String(timestamp),
                [WEBHOOK_HEADERS.signature]: signWebhook(opts.webhookSecret, webhookId, timestamp, raw),
                'x-commerce-topic': topic,
                'x-commerce-shop-domain': domain,
              },
              body: raw,
              redirect: 'manual',
              signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
            });
            await res.body?.cancel();
            return { address: s.address, status: res.status, at: new Date() };
          } catch {
            return { address: s.address, status: null, at: new Date() };
          }
        }),
      );
      await db.Webhook.create({ _id: webhookId, domain, topic, deliveries, createdAt: new Date() });
      return reply.status(201).send({ webhook_id: webhookId, deliveries: deliveries.map((d) => ({ status: d.status })) });
    },
  );

  app.post<{ Body: { store_domain?: string; health?: string } }>('/_standin/deployments', async (req, reply) => {
    const health = (req.body?.health ?? 'healthy') as DeploymentHealth;
    if (!DEPLOYMENT_HEALTH.includes(health)) return fail(reply, 422, `health must be one of ${DEPLOYMENT_HEALTH.join(', ')}`);
    const id = randomUUID();
    await db.Deployment.create({ _id: id, storeDomain: req.body?.store_domain ?? null, health, createdAt: new Date() });
    return reply.status(201).send({ deployment_id: id, health_url: `${baseUrl}/_standin/deployments/${id}/health` });
  });

  app.put<{ Params: { id: string }; Body: { health?: string } }>('/_standin/deployments/:id', async (req, reply) => {
    const health = req.body?.health as DeploymentHealth;
    if (!DEPLOYMENT_HEALTH.includes(health)) return fail(reply, 422, `health must be one of ${DEPLOYMENT_HEALTH.join(', ')}`);
    const res = await db.Deployment.updateOne({ _id: req.params.id }, { $set: { health } });
    if (res.matchedCount === 0) return fail(reply, 404, 'Not Found');
    return { deployment_id: req.params.id, health };
  });

  // A release's health endpoint: 200 ok, 200 degraded (slow, partial), or 503 failing.
  app.get<{ Params: { id: string } }>('/_standin/deployments/:id/health', async (req, reply) => {
    const d = await db.Deployment.findById(req.params.id).lean();
    if (!d) return fail(reply, 404, 'Not Found');
    if (d.health === 'failing') return reply.status(503).send({ status: 'failing' });
    return { status: d.health === 'degraded' ? 'degraded' : 'ok' };
  });

  const address = await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  baseUrl = address.replace('://localhost', '://127.0.0.1');
  return {
    url: baseUrl,
    app,
    async stop() {
      await closeListener(app);
      await conn.close();
    },
  };
}
