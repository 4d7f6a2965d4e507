import { CliUsageError, type CliCommand } from '../../core/area';
import type { CommerceService } from './service';
import { DEPLOYMENT_HEALTH } from './stand-in';

/** docs/contracts.md, "The CLI": the commerce CLI commands (thin: they call the same services as the API). */
const str = (values: Record<string, unknown>, name: string, usage: string): string => {
  const v = values[name];
  if (typeof v !== 'string' || v.trim() === '') throw new CliUsageError(`--${name} is required (${usage}).`);
  return v.trim();
};
const count = (values: Record<string, unknown>, name: string, fallback: number | null): number => {
  const v = values[name];
  if (v === undefined && fallback !== null) return fallback;
  if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new CliUsageError(`--${name} must be a whole number.`);
  return Number(v);
};

export const commerceCli: CliCommand<CommerceService>[] = [
  {
    words: ['commerce', 'stores', 'create'],
    usage: '--domain DOMAIN',
    options: { domain: { type: 'string' } },
    required: ['domain'],
    run: async ({ values, services }) => {
      const domain = str(values, 'domain', '--domain DOMAIN');
      return services.control.createStore(domain);
    },
  },
  {
    words: ['commerce', 'stores', 'emit'],
    usage: '--domain DOMAIN --topic TOPIC',
    options: { domain: { type: 'string' }, topic: { type: 'string' } },
    required: ['domain', 'topic'],
    run: async ({ values, services }) => {
      const usage = '--domain DOMAIN --topic TOPIC';
      const [domain, topic] = [str(values, 'domain', usage), str(values, 'topic', usage)];
      return services.control.emitWebhook(domain, topic);
    },
  },
  {
    words: ['commerce', 'deploy'],
    usage: '--project ID --environment development|production|preview (--bundle DIR | --health healthy|failing|degraded)',
    options: {
      project: { type: 'string' },
      environment: { type: 'string' },
      health: { type: 'string' },
      bundle: { type: 'string' },
    },
    required: ['project', 'environment'],
    run: async ({ values, services }) => {
      const usage = '--project ID --environment development|production|preview';
      if (values.bundle !== undefined) {
        if (values.health !== undefined) throw new CliUsageError('--bundle and --health do not go together.');
        const dir = str(values, 'bundle', '--bundle DIR');
        const { release: r, artifact } = await services.deployBundle(
          str(values, 'project', usage),
          str(values, 'environment', usage),
          dir,
        );
        return {
          release_id: r._id,
          url: services.releases.url(r),
          ...(r.previewId ? { preview_id: r.previewId } : {}),
          environment: r.environment,
          status: r.status,
          artifact: artifact.sha256,
          operation_id: r.operationId,
        };
      }
      const health = (values.health as string | undefined) ?? 'healthy';
      if (!DEPLOYMENT_HEALTH.includes(health as never)) {
        throw new CliUsageError(`--health must be one of ${DEPLOYMENT_HEALTH.join(', ')}.`);
      }
      const r = await services.deploy(str(values, 'project', usage), str(values, 'environment', usage), health);
      return {
        release_id: r._id,
        ...(r.previewId ? { preview_id: r.previewId } : {}),
        environment: r.environment,
        status: r.status,
        operation_id: r.operationId,
      };
    },
  },
  {
    words: ['commerce', 'traffic'],
    usage: '--project ID --requests N [--errors M] [--minutes-ago K]',
    options: {
      project: { type: 'string' },
      requests: { type: 'string' },
      errors: { type: 'string' },
      'minutes-ago': { type: 'string' },
    },
    required: ['project', 'requests'],
    run: async ({ values, services }) => {
      const project = str(values, 'project', '--project ID --requests N');
      const requests = count(values, 'requests', null);
      const errors = count(values, 'errors', 0);
      if (errors > requests) throw new CliUsageError('--errors must not exceed --requests.');
      const recorded = await services.recordTraffic(project, requests, errors, count(values, 'minutes-ago', 0));
      return { recorded, errors };
    },
  },
];
