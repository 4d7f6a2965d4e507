/**
 * The baseline of the publisher's REST reads: a plain Fastify + mongoose handler doing the same
 * reads as the platform's routes, with the same 5 s principal cache, on the same database, and no
 * router, gateway, GraphQL or signed principal in between. It is what "a plain handler" means in
 * docs/benchmarks.md: the platform's figures are stated as a ratio of this one's.
 *
 *   GET /api/v1/publisher/projects/:id/metadata          key (cached) → site → [operation, project, provider]
 *   GET /api/v1/publisher/projects/:id/recovery-points   key (cached) → site → points (newest 100)
 *   POST /api/v1/publisher/sites                          key (cached) → plan slot (conditional upsert)
 *                                                         → site by id → project, site, operation inserts
 */
import Fastify from 'fastify';
import mongoose from 'mongoose';
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';

const PRINCIPAL_CACHE_MS = 5_000;
const loose = () => new mongoose.Schema({ _id: String }, { strict: false, versionKey: false });

interface Principal {
  accountId: string;
}

export interface PlainServer {
  url: string;
  conn: mongoose.Connection;
  close(): Promise<void>;
}

type Doc = Record<string, any>;

const iso = (d: unknown) => (d instanceof Date ? d.toISOString() : (d ?? null));

export async function startPlainPublisher(mongodbUri: string, sitesDomain = 'sites.localhost'): Promise<PlainServer> {
  const conn = await mongoose.createConnection(mongodbUri, { maxPoolSize: 20 }).asPromise();
  const m = (name: string, collection: string) => conn.model<Doc>(name, loose(), collection);
  const ApiKey = m('ApiKey', 'api_keys');
  const Account = m('Account', 'accounts');
  const Site = m('Site', 'publisher_sites');
  const Operation = m('Operation', 'operations');
  const Project = m('Project', 'projects');
  const Provider = m('Provider', 'publisher_newsletter_providers');
  const Sender = m('Sender', 'account_senders');
  const Point = m('Point', 'publisher_recovery_points');
  const Quota = m('Quota', 'publisher_site_quota');

  const cache = new Map<string, { principal: Principal | null; until: number }>();
  async function principalOf(auth: string | undefined): Promise<Principal | null> {
    const raw = auth?.startsWith('Bearer ') ? auth.slice(7) : '';
    const hit = cache.get(raw);
    if (hit && hit.until > Date.now()) return hit.principal;
    let principal: Principal | null = null;
    const prefix = /^(pk_[0-9a-f]{12})_/.exec(raw)?.[1];
    const key = prefix ? await ApiKey.findOne({ prefix }).lean() : null;
    const hash = Buffer.from(createHash('sha256').update(raw).digest('hex'));
    if (key && !key.revokedAt && timingSafeEqual(hash, Buffer.from(key.hash as string))) {
      const account = await Account.findById(key.accountId).lean();
      if (account) principal = { accountId: account._id as string };
    }
    cache.set(raw, { principal, until: Date.now() + PRINCIPAL_CACHE_MS });
    return principal;
  }

  const app = Fastify({ logger: false });
  const siteOf = async (auth: string | undefined, id: string): Promise<Doc | null | 'unauthenticated'> => {
    const p = await principalOf(auth);
    if (!p) return 'unauthenticated';
    const site = await Site.findById(id).lean();
    return site && site.accountId === p.accountId ? site : null;
  };

  app.get<{ Params: { id: string } }>('/api/v1/publisher/projects/:id/metadata', async (req, reply) => {
    const site = await siteOf(req.headers.authorization, req.params.id);
    if (site === 'unauthenticated') return reply.status(401).send({ success: false });
    if (!site) return reply.status(404).send({ success: false });
    const [op, project, provider, sender] = await Promise.all([
      site.activeOperationId ? Operation.findById(site.activeOperationId).lean() : null,
      Project.findById(site._id).lean(),
      Provider.findById(site._id).lean(),
      site.mailSenderEmail ? Sender.findById(`${site.accountId}:${site.mailSenderEmail}`).lean() : null,
    ]);
    const running = op && (op.status === 'queued' || op.status === 'running');
    return {
      success: true,
      data: {
        installation: {
          runtime_version: site.runtimeVersion,
          status: site.status,
          environment: site.environment ?? 'production',
          source_project_id: site.sourceProjectId ?? null,
          source_recovery_point_id: site.sourceRecoveryPointId ?? null,
          site_url: site.siteUrl,
          admin_url: site.adminUrl,
          domain: site.domain ?? null,
          deployment_mode: site.deploymentMode,
          target_node_id: site.targetNodeId ?? null,
          placement_mode: site.placementMode ?? null,
          node_selector_tags: site.nodeSelectorTags ?? [],
        },
        project: { id: site._id, name: project?.name ?? site.name, created_at: iso(site.createdAt) },
        active_operation: running ? { id: op._id, status: op.status, step: op.step ?? null } : null,
        domain: site.domain
          ? {
              name: site.domain,
              status: site.domainStatus,
              dns_record: { type: 'CNAME', name: site.domain, value: `${site.slug}.${sitesDomain}` },
            }
          : null,
        mail: {
          enabled: Boolean(site.mailEnabled),
          transactional_configured: Boolean(site.mailSenderEmail),
          sender_verified: Boolean(sender?.verified),
          newsletter_provider_configured: Boolean(provider),
        },
      },
    };
  });

  app.get<{ Params: { id: string } }>('/api/v1/publisher/projects/:id/recovery-points', async (req, reply) => {
    const site = await siteOf(req.headers.authorization, req.params.id);
    if (site === 'unauthenticated') return reply.status(401).send({ success: false });
    if (!site) return reply.status(404).send({ success: false });
    const points = await Point.find({ projectId: site._id }).sort({ createdAt: -1, _id: -1 }).limit(100).lean();
    const capture = (c: Doc | undefined) => ({
      status: c?.status,
      snapshot_id: c?.snapshotId ?? null,
      size_bytes: c?.sizeBytes ?? null,
      captured_at: iso(c?.capturedAt),
    });
    return {
      success: true,
      data: points.map((d) => ({
        id: d._id,
        project_id: d.projectId,
        kind: d.kind,
        reason: d.reason ?? null,
        status: d.status,
        runtime_version: d.runtimeVersion,
        runtime_digest: d.runtimeDigest,
        runtime_image: d.runtimeImage,
        database: capture(d.database),
        content: capture(d.content),
        release: capture(d.release),
        operation_id: d.operationId,
        error_code: d.errorCode ?? null,
        created_at: iso(d.createdAt),
        completed_at: iso(d.completedAt),
      })),
    };
  });

  // The same writes as the platform's create (site-creation.ts): a hosted slot of the plan, a
  // resumed-create check, the project, the site holding its lock, the provisioning operation. No validation beyond the name, no GraphQL, no envelope beyond this.
  app.post<{ Body: { name?: string } }>('/api/v1/publisher/sites', async (req, reply) => {
    const p = await principalOf(req.headers.authorization);
    if (!p) return reply.status(401).send({ success: false });
    const name = (req.body?.name ?? '').trim();
    if (!name) return reply.status(400).send({ success: false });
    const siteId = randomUUID();
    const operationId = randomUUID();
    const quota = await Quota.findOneAndUpdate(
      { _id: p.accountId, hostedSites: { $lt: 100 }, holders: { $ne: siteId } },
      { $inc: { hostedSites: 1 }, $push: { holders: siteId } },
      { upsert: true, new: true },
    ).lean();
    if (!quota) return reply.status(402).send({ success: false });
    if (await Site.findById(siteId).lean()) return reply.status(409).send({ success: false });
    const now = new Date();
    await Project.create({ _id: siteId, accountId: p.accountId, name, sourceType: 'site', createdAt: now });
    const slug = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${siteId.slice(0, 6)}`;
    const siteUrl = `https://${slug}.${sitesDomain}`;
    await Site.create({
      _id: siteId,
      accountId: p.accountId,
      name,
      slug,
      status: 'provisioning',
      siteUrl,
      adminUrl: `${siteUrl}/admin/`,
      deploymentMode: 'hosted',
      activeOperationId: operationId,
      activeOperationAt: now,
      createdAt: now,
      updatedAt: now,
    });
    await Operation.create({
      _id: operationId,
      accountId: p.accountId,
      projectId: siteId,
      resourceType: 'site',
      resourceId: siteId,
      operationType: 'bench_provision',
      status: 'pending',
      step: 'queued',
      runAfter: now,
      lease: { owner: null, token: 0, until: null },
      createdAt: now,
      updatedAt: now,
      // Same shape, but an empty outbox: the platform's relay (same database) would publish it.
      outbox: [],
    });
    return reply.status(202).send({
      success: true,
      data: {
        project: { id: siteId, name, created_at: now.toISOString() },
        site_url: siteUrl,
        operation: { id: operationId, status: 'pending', step: 'queued' },
      },
    });
  });

  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    conn,
    async close() {
      await app.close();
      await conn.close();
    },
  };
}
