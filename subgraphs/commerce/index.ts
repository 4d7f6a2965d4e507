import { commerceError } from './errors';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import '../../core/activity-scopes';
import { defineArea } from '../../core/area';
import { commerceCli } from './cli';
import { COMMERCE_BODY_LIMIT } from './limits';
import { COMMERCE_OPERATION_TYPES } from './operation-view';
import { CommerceResolver } from './resolvers';
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
});

/** The inbound webhook receiver: raw bytes, verified before anything is parsed. */
function webhookReceiver(app: FastifyInstance, services: CommerceService): void {
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
    scope.post(WEBHOOK_RECEIVER_PATH, async (req, reply) => {
      const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      const result = await services.observations.receive(req.headers, raw);
      if (result.status !== 200) {
        const code = result.status === 401 ? 'COMMERCE_UNAUTHENTICATED' : 'COMMERCE_INVALID_CONFIGURATION';
        return reply.status(result.status).send({
          success: false,
          status: 'error',
          status_code: result.status,
          message: result.reason,
          data: null,
          error: { code, message: result.reason, details: {} },
        });
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
  routes: commerceRoutes,
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
