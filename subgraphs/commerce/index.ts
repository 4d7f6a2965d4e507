import { commerceError } from './errors';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import '../../core/activity-scopes';
import { defineArea } from '../../core/area';
import { DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import { commerceCli } from './cli';
import type { CommerceCode } from './errors';
import { isPlatformError } from '../../core/errors';
import { COMMERCE_BODY_LIMIT } from './limits';
import { COMMERCE_OPERATION_TYPES } from './operation-view';
import { CommerceResolver } from './resolvers';
import { commerceByteRoutes } from './byte-routes';
import { commerceRoutes } from './routes';
import { type CommerceService, CommerceService as Service, WEBHOOK_RECEIVER_PATH, webhookSecretOf } from './service';
import { startCommerceStandIn } from './stand-in';

export { CommerceService } from './service';

/** The area's env settings. */
export const commerceConfig = z.object({
  /** Commerce hosting on in this environment; off → every route answers 404 `COMMERCE_DISABLED`. */
  COMMERCE_ENABLED: z.enum(['true', 'false', '1', '0']).optional(),
  /** The commerce platform's address; unset → the local stand-in is started and used. */
  COMMERCE_PLATFORM_URL: z.string().url().optional(),
  /** The platform app's webhook key (Standard Webhooks, `whsec_…` or any string ≥ 16). */
  COMMERCE_WEBHOOK_SECRET: z.string().min(16).optional(),
  /** Port of the local stand-in (default: a free one; `platform start` records it for the CLI). */
  COMMERCE_STANDIN_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Simulated infrastructure delay of a release step and between health probes, in milliseconds. */
  SIMULATED_STEP_DELAY_MS: z.coerce.number().int().min(0).default(600),
  /** How long a bundle release has to answer `GET /` 2xx through the edge (contract: 60 s; tests shorten it). */
  COMMERCE_HEALTH_GATE_MS: z.coerce.number().int().min(1000).max(600_000).default(60_000),
  /** Per-account artifact quota by plan, bytes and artifacts (defaults: `DEFAULT_ARTIFACT_QUOTA`, decision 0271). */
  COMMERCE_ARTIFACT_QUOTA_BYTES_FREE: z.coerce.number().int().positive().optional(),
  COMMERCE_ARTIFACT_QUOTA_BYTES_PRO: z.coerce.number().int().positive().optional(),
  COMMERCE_ARTIFACT_QUOTA_COUNT_FREE: z.coerce.number().int().positive().optional(),
  COMMERCE_ARTIFACT_QUOTA_COUNT_PRO: z.coerce.number().int().positive().optional(),
  /**
   * The largest `memory_mb` an environment of the plan may set, MiB (defaults: free 512, pro 1024;
   * never below the release default, 512, so an environment without one is within every plan).
   */
  COMMERCE_MEMORY_MAX_MB_FREE: z.coerce.number().int().min(DEFAULT_RELEASE_MEMORY_MB).optional(),
  COMMERCE_MEMORY_MAX_MB_PRO: z.coerce.number().int().min(DEFAULT_RELEASE_MEMORY_MB).optional(),
});

/** A commerce error answer of the receiver (spec 1.5, commerce envelope). */
const failure = (reply: FastifyReply, status: number, code: CommerceCode, message: string) =>
  reply.status(status).send({
    success: false,
    status: 'error',
    status_code: status,
    message,
    data: null,
    error: { code, message, details: {} },
  });
/**
 * Artifact upload (docs/spec-decisions.md, commerce releases): `PUT …/commerce/artifacts` with the
 * bundle's tar archive as the body (at most 64 MiB); answers its SHA-256, which
 * `POST …/commerce/releases` takes. Raw bytes, so it sits on the bridge beside the webhook receiver.
 * The body is not parsed here: the service streams it to disk (decision 0271).
 */
function artifactUpload(app: FastifyInstance, services: CommerceService): void {
  const refuse = (reply: FastifyReply, e: unknown) => {
    if (!isPlatformError(e)) throw e;
    return reply.status(e.status).send({
      success: false,
      status: 'error',
      status_code: e.status,
      message: e.message,
      data: null,
      error: { code: e.code, message: e.message, details: e.details },
    });
  };
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
    scope.put<{ Params: { projectID: string } }>(
      '/api/v1/projects/:projectID/commerce/artifacts',
      {
        // The key and the project are checked before a byte of the body is read (401, 403, 404 first).
        onRequest: async (req, reply) => {
          try {
            const { projectID } = req.params as { projectID: string };
            await services.mayUploadArtifact(req.headers.authorization, projectID, req.headers['content-length']);
          } catch (e) {
            // The body is never read: the connection closes after the answer.
            reply.header('connection', 'close');
            return refuse(reply, e);
          }
        },
      },
      async (req, reply) => {
        try {
          const body = req.body instanceof Readable ? req.body : Readable.from([]);
          const a = await services.uploadArtifact(req.headers.authorization, req.params.projectID, body);
          // The same answer whether or not the bytes were stored before (`stored` is always true).
          return reply.status(201).send({
            success: true,
            status: 'success',
            status_code: 201,
            message: 'Created',
            data: { artifact: a.sha256, bytes: a.bytes, stored: true },
          });
        } catch (e) {
          // A refusal before the whole body arrived (too large): the rest is drained, the connection closed.
          if (!req.raw.readableEnded) {
            reply.header('connection', 'close');
            req.raw.resume();
          }
          return refuse(reply, e);
        }
      },
    );
  });
}

/** The inbound webhook receiver: raw bytes, verified before anything is parsed. */
function webhookReceiver(app: FastifyInstance, services: CommerceService): void {
  artifactUpload(app, services);
  const host = (address: string) => (address === '0.0.0.0' || address === '::' ? '127.0.0.1' : address);
  services.bridgeAddress = () => {
    const a = app.server.address();
    return a && typeof a === 'object' && a.port
      ? `http://${host(a.address).includes(':') ? `[${a.address}]` : host(a.address)}:${a.port}`
      : null;
  };
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: COMMERCE_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    // A body over 64 KiB (or any failure before the handler) answers in the commerce envelope too.
    scope.setErrorHandler((err: Error & { code?: string }, _req, reply) =>
      err.code === 'FST_ERR_CTP_BODY_TOO_LARGE'
        ? failure(reply, 413, 'COMMERCE_PAYLOAD_TOO_LARGE', 'request body is too large')
        : failure(reply, 500, 'COMMERCE_OPERATION_FAILED', 'internal error'),
    );
    scope.post(WEBHOOK_RECEIVER_PATH, async (req, reply) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const result = await services.observations.receive(req.headers, raw);
      if (result.status !== 200) {
        const code = result.status === 401 ? 'COMMERCE_UNAUTHENTICATED' : 'COMMERCE_INVALID_CONFIGURATION';
        return failure(reply, result.status, code, result.reason);
      }
      return reply.status(200).send({
        success: true,
        status: 'success',
        status_code: 200,
        message: 'OK',
        data: { recorded: result.recorded, duplicate: result.duplicate },
      });
    });
  });
}

export default defineArea<CommerceService, z.infer<typeof commerceConfig>>({
  name: 'commerce',
  portOffset: 5,
  config: commerceConfig,
  services: (ctx) =>
    new Service({ conn: ctx.conn, engine: ctx.engine, ports: ctx.ports, config: ctx.config, settings: ctx.settings }),
  subgraph: (services) => ({
    resolvers: [CommerceResolver],
    createResolver: (cls) => new cls(services),
    // The kernel's key and scope check (core/subgraph-kit.ts) answers in commerce's codes.
    refusal: (e) => commerceError(e.status === 401 ? 'COMMERCE_UNAUTHENTICATED' : 'COMMERCE_FORBIDDEN', e.message, e.details),
  }),
  provides(s, ports) {
    // The hosted node's agent runs bundle releases with what this area gives it (docs/decisions/0325-nodes-module.md).
    ports.provide('hostedReleases', s.hostedReleases());
    // An application (spec 4.6 `/applications/{appID}`) is a project's commerce connection: its id
    // is the connection's, and its activity the connect, verify and release operations.
    ports.provide('applicationScopes', {
      async resolve(accountId, id) {
        const c = await s.models.Connection.findOne({ _id: id, accountId }, { _id: 1 }).lean();
        return c
          ? {
              projectId: c._id,
              resourceTypes: ['commerce_connection', 'commerce_environment', 'commerce_release'],
              actionKeyPrefix: 'application.',
            }
          : null;
      },
    });
  },
  executors: (s) => ({
    [COMMERCE_OPERATION_TYPES.connect]: (ctx) => s.connections.runConnect(ctx),
    [COMMERCE_OPERATION_TYPES.verify]: (ctx) => s.connections.runVerify(ctx),
    [COMMERCE_OPERATION_TYPES.release]: (ctx) => s.releases.runRelease(ctx),
  }),
  workers: (s) => {
    // Releases that should run come back through the data plane's reconcile loop, where this process runs one.
    let stop: (() => void) | undefined;
    return [
      {
        name: 'commerce-release-reconcile',
        async start() {
          stop = s.reconcileOnDataPlane();
        },
        async stop() {
          stop?.();
        },
      },
    ];
  },
  routes: commerceRoutes,
  byteRoutes: commerceByteRoutes,
  cli: commerceCli,
  standIns: [
    {
      name: 'commerce platform',
      env: 'COMMERCE_PLATFORM_URL',
      secrets: ['COMMERCE_WEBHOOK_SECRET'],
      async start({ config, host }) {
        const settings = commerceConfig.parse(config.env);
        const port = settings.COMMERCE_STANDIN_PORT ?? 0;
        const s = await startCommerceStandIn({
          mongodbUri: config.mongodbUri,
          webhookSecret: webhookSecretOf(settings, config),
          host,
          port,
        });
        return { value: s.url, stop: () => s.stop() };
      },
    },
  ],
  http: { bridge: webhookReceiver },
});
