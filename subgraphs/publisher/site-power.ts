import { createHash, randomUUID } from 'node:crypto';
import type { ActivityRecord, ActivitySource } from '../../core/activity-source';
import type { BackgroundWorker } from '../../core/area';
import type { EventBus } from '../../core/events/event-bus';
import type { SiteEvent } from '../../dataplane/agent/wire';
import type { SitePowerEvents } from '../../dataplane/sites';
import { HOSTED_NODE_ID } from '../../nodes/registry';
import type { PublisherModels } from './model';

/**
 * Sleep and wake in the activity feeds (docs/decisions/0340-sleep-and-wake.md): events, not
 * operations a user waits on. Each time the node's data plane puts a site to sleep or wakes it, one
 * event goes out on `<prefix>.publisher.site-power`; the activity area consumes this declared
 * source (core/activity-source.ts) into the site's project feed as a completed item.
 */
/** The topic after the prefix (the area's `ctx.topic('site-power')`). */
export const SITE_POWER_TOPIC = 'publisher.site-power';
export const SITE_POWER_SOURCE_KIND = 'publisher_site_power';

export interface SitePowerEvent {
  event_id: string;
  site_id: string;
  account_id: string;
  kind: 'slept' | 'woke';
  /** Why it slept: `idle` (no request for the idle time) or `capacity` (room for another site). */
  reason: 'idle' | 'capacity' | null;
  /** How long the wake took, in ms (`woke` only). */
  wake_ms: number | null;
  at: string;
}

export function mapSitePowerEvent(e: SitePowerEvent): ActivityRecord | null {
  if (!e || typeof e.event_id !== 'string' || typeof e.site_id !== 'string' || typeof e.account_id !== 'string') return null;
  if ((e.kind !== 'slept' && e.kind !== 'woke') || Number.isNaN(Date.parse(e.at))) return null;
  const title =
    e.kind === 'slept'
      ? `Site went to sleep (${e.reason === 'capacity' ? 'room for another site' : 'idle'})`
      : `Site woke up in ${((e.wake_ms ?? 0) / 1000).toFixed(1)} s`;
  return {
    id: `${SITE_POWER_SOURCE_KIND}:${e.event_id}`,
    sourceKind: SITE_POWER_SOURCE_KIND,
    sourceId: e.event_id,
    accountId: e.account_id,
    resource: { type: 'project', id: e.site_id },
    projectId: e.site_id,
    title,
    type: `site.${e.kind}`,
    status: 'completed',
    sourceStatus: e.kind,
    step: null,
    terminal: { outcome: e.kind, at: e.at },
    initiator: { type: 'platform', id: null },
    createdAt: e.at,
    startedAt: e.at,
    updatedAt: e.at,
    finishedAt: e.at,
    version: 1,
    extra: { reason: e.reason, wake_ms: e.wake_ms },
  };
}

export const sitePowerActivitySource: ActivitySource<SitePowerEvent> = {
  sourceKind: SITE_POWER_SOURCE_KIND,
  topic: SITE_POWER_TOPIC,
  map: mapSitePowerEvent,
};

/**
 * The sleeps and wakes a connected node's agent sent with its heartbeat
 * (docs/decisions/0350-node-power-events.md): those of sites placed on that node are published as
 * the hosted node's are; any other site's are ignored. The hosted node's own agent sends them only
 * when it runs outside the platform (`PUBLISHER_HOSTED_AGENT=external`): they are its hosted sites'. An event's id comes from the node, the site,
 * the kind and the moment, so one sent again (its heartbeat's answer was lost) is the same feed item.
 */
export function nodeSitePower(o: {
  models: PublisherModels;
  bus: EventBus;
  topic: string;
}): (nodeId: string, events: SiteEvent[]) => Promise<void> {
  return async (nodeId, events) => {
    if (events.length === 0) return;
    const ids = [...new Set(events.map((e) => e.site_id))];
    // The hosted node's sites are the hosted ones (an agent outside the platform runs them).
    const on =
      nodeId === HOSTED_NODE_ID ? { deploymentMode: 'hosted' } : { targetNodeId: nodeId, deploymentMode: 'connected_node' };
    const placed = await o.models.Site.find({ _id: { $in: ids }, ...on }, { accountId: 1 }).lean();
    const account = new Map(placed.map((s) => [String(s._id), s.accountId]));
    const out = events.flatMap((e) => {
      const accountId = account.get(e.site_id);
      if (!accountId) return [];
      const id = createHash('sha256').update(`${nodeId}|${e.site_id}|${e.kind}|${e.at}`).digest('hex').slice(0, 32);
      const value: SitePowerEvent = {
        event_id: id,
        site_id: e.site_id,
        account_id: accountId,
        kind: e.kind,
        reason: e.kind === 'slept' ? (e.reason ?? 'idle') : null,
        wake_ms: e.kind === 'woke' ? (e.wake_ms ?? null) : null,
        at: e.at,
      };
      return [{ topic: o.topic, key: e.site_id, value }];
    });
    if (out.length) await o.bus.publish(out);
  };
}

/** What the worker listens to: the site host's `power` emitter. */
interface PowerSource {
  on<K extends keyof SitePowerEvents>(event: K, fn: (...args: SitePowerEvents[K]) => void): unknown;
  off<K extends keyof SitePowerEvents>(event: K, fn: (...args: SitePowerEvents[K]) => void): unknown;
}

/**
 * Publishes the sleeps and wakes of this process's data plane (the hosted node's sites). An event
 * that cannot be published is logged and dropped: the site's state is the data plane's, the feed
 * only tells of it.
 */
export function sitePowerWorker(o: {
  power: () => PowerSource | null;
  models: PublisherModels;
  bus: EventBus;
  topic: string;
  log: (msg: string, err?: Error) => void;
}): BackgroundWorker {
  let source: PowerSource | null = null;
  const send = async (siteId: string, e: Omit<SitePowerEvent, 'event_id' | 'site_id' | 'account_id'>) => {
    const site = await o.models.Site.findById(siteId, { accountId: 1 }).lean();
    if (!site) return;
    const event: SitePowerEvent = { event_id: randomUUID(), site_id: siteId, account_id: site.accountId, ...e };
    await o.bus.publish([{ topic: o.topic, key: siteId, value: event }]);
  };
  const report = (p: Promise<void>) => p.catch((err: Error) => o.log('a site power event was not published', err));
  const slept = (e: SitePowerEvents['slept'][0]) =>
    void report(send(e.siteId, { kind: 'slept', reason: e.reason, wake_ms: null, at: e.at }));
  const woke = (e: SitePowerEvents['woke'][0]) =>
    void report(send(e.siteId, { kind: 'woke', reason: null, wake_ms: e.ms, at: e.at }));
  return {
    name: 'publisher-site-power',
    start() {
      source = o.power();
      source?.on('slept', slept);
      source?.on('woke', woke);
    },
    stop() {
      source?.off('slept', slept);
      source?.off('woke', woke);
      source = null;
    },
  };
}
