import type { Connection } from 'mongoose';
import type { EventBus } from '../events/event-bus';
import { OPERATION_MODEL_NAME } from '../operations/model';
import type { ScrapeProbe } from './metrics';

/** Documents a probe reads per collection and scrape at most: 50,000 (a backlog beyond that reads as that). */
const PROBE_READ_LIMIT = 50_000;
/** Router instances consume feeds as `router-feed-<uuid>`: one label value for all of them. */
const PER_INSTANCE_GROUP = /^(router-feed)-[0-9a-f-]{36}$/;

const ageS = (d: Date | string | undefined, now: number): number | null =>
  d === undefined ? null : Math.max(0, (now - new Date(d).getTime()) / 1000);

/**
 * What `/metrics` and `platform status` read from the engines: unfinished durable operations,
 * pending outbox events of every model that carries an outbox, and the consumer lag of the bus's
 * groups. Each is a read on the wire server (which scans), so it runs per scrape, not per request.
 */
export function platformProbe(conn: Connection, bus?: EventBus): Required<ScrapeProbe> {
  return {
    async operations() {
      const model = conn.models[OPERATION_MODEL_NAME];
      if (!model) return { counts: [], oldestPendingAgeS: null, oldestPending: null };
      const docs = await model
        .find({ status: { $in: ['pending', 'running'] } }, { operationType: 1, status: 1, createdAt: 1 })
        .limit(PROBE_READ_LIMIT)
        .lean<Array<{ _id: string; operationType: string; status: string; createdAt: Date }>>()
        .exec();
      const now = Date.now();
      const counts = new Map<string, { type: string; status: string; count: number }>();
      let oldest: (typeof docs)[number] | undefined;
      for (const d of docs) {
        const k = `${d.operationType}\u0000${d.status}`;
        const row = counts.get(k) ?? { type: d.operationType, status: d.status, count: 0 };
        row.count++;
        counts.set(k, row);
        if (d.status === 'pending' && (!oldest || d.createdAt < oldest.createdAt)) oldest = d;
      }
      const oldestPendingAgeS = ageS(oldest?.createdAt, now);
      return {
        counts: [...counts.values()],
        oldestPendingAgeS,
        oldestPending: oldest ? { id: String(oldest._id), type: oldest.operationType, ageS: oldestPendingAgeS ?? 0 } : null,
      };
    },
    async outbox() {
      const now = Date.now();
      const rows = [];
      for (const name of conn.modelNames()) {
        const model = conn.model(name);
        if (!model.schema.path('outbox')) continue;
        const docs = await model
          .find({ 'outbox.createdAt': { $exists: true } }, { 'outbox.createdAt': 1 })
          .limit(PROBE_READ_LIMIT)
          .lean<Array<{ outbox?: Array<{ createdAt: Date }> }>>()
          .exec();
        let pending = 0;
        let oldest: Date | undefined;
        for (const d of docs) {
          for (const e of d.outbox ?? []) {
            pending++;
            if (!oldest || e.createdAt < oldest) oldest = e.createdAt;
          }
        }
        rows.push({ collection: model.collection.name, pending, oldestAgeS: ageS(oldest, now) });
      }
      return rows;
    },
    async consumerLag() {
      const rows = (await bus?.consumerLag?.()) ?? [];
      return rows.map((r) => ({ group: r.groupId.replace(PER_INSTANCE_GROUP, '$1'), topic: r.topic, lag: r.lag }));
    },
  };
}
