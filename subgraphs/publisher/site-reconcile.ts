import type { AreaContext, BackgroundWorker } from '../../core/area';
import type { PublisherServices } from './index';
import type { PublisherSettings } from './settings';

/**
 * Registers the publishing area's reconcile pass with the data plane's one reconcile loop
 * (dataplane/reconcile.ts; docs/decisions/0155-site-reconcile.md) where this process runs both the
 * area's workers and the data plane with the real executor: registering runs the pass at once, so a
 * platform that starts again brings its sites back up and routes them without any client request.
 */
export function siteReconcileWorker(s: PublisherServices, ctx: AreaContext<PublisherSettings>): BackgroundWorker {
  let unregister: (() => void) | undefined;
  return {
    name: 'publisher-site-reconcile',
    start() {
      if (s.infra.kind !== 'real' || !ctx.ports.has('dataPlane')) return;
      unregister = ctx.ports.get('dataPlane').reconciler.register('publisher', () => s.real.reconcile());
    },
    stop() {
      unregister?.();
      unregister = undefined;
    },
  };
}
