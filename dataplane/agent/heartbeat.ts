import type { SiteHost } from '../sites';
import {
  type AgentBody,
  type HeartbeatReply,
  MAX_REPORTED_PROCESSES,
  MAX_SITE_EVENTS,
  type SiteEvent,
  toProcessReport,
} from './wire';

/**
 * What an agent's heartbeat carries beyond its edge port and session: the sleeps and wakes of its own
 * plane not yet sent (docs/decisions/0350-node-power-events.md) and, where it runs its own plane (a
 * customer's node, or the hosted node's agent outside the platform), the process of every site it runs (docs/decisions/0385-connected-site-process.md), a whole report each time, so
 * the platform's copy is never older than the last heartbeat.
 */
export class HeartbeatReport {
  /**
   * The sleeps and wakes not yet sent (the last MAX_SITE_EVENTS). An agent on the platform's plane (the
   * hosted node's in-process one) keeps none: sitePowerWorker publishes those.
   */
  private readonly events: SiteEvent[] = [];
  /** False once the platform refused the processes (a platform older than them): not sent again. */
  private processesTaken = true;

  constructor(
    private readonly sites: Pick<SiteHost, 'processes' | 'power'>,
    /** False for an agent on the platform's own plane. */
    keepsEvents: boolean,
    private readonly log: (line: string) => void,
  ) {
    if (!keepsEvents) return;
    const keep = (e: SiteEvent) => {
      this.events.push(e);
      if (this.events.length > MAX_SITE_EVENTS) this.events.shift();
    };
    sites.power.on('slept', (e) => keep({ site_id: e.siteId, kind: 'slept', reason: e.reason, at: e.at }));
    sites.power.on('woke', (e) => keep({ site_id: e.siteId, kind: 'woke', wake_ms: Math.round(e.ms), at: e.at }));
  }

  /**
   * One heartbeat through `call`. The events leave the queue once the platform took them, so a failed
   * heartbeat sends them again with the next. `processes`: this agent runs sites on a plane not the platform's.
   */
  async send(
    call: (body: AgentBody<'heartbeat'>) => Promise<HeartbeatReply>,
    base: { edge_port: number; session: string },
    processes: boolean,
  ): Promise<HeartbeatReply> {
    const sent = this.events.slice();
    const reported =
      processes && this.processesTaken
        ? this.sites
            .processes()
            .slice(0, MAX_REPORTED_PROCESSES)
            .map((p) => toProcessReport(p.siteId, p))
        : null;
    if (sent.length === 0 && !reported) return call(base);
    try {
      const hb = await call({
        ...base,
        ...(sent.length ? { site_events: sent } : {}),
        ...(reported ? { site_processes: reported } : {}),
      });
      this.forget(sent);
      return hb;
    } catch (e) {
      // A platform older than a field refuses it: the node stays reachable without it.
      if ((e as { code?: string }).code !== 'invalid_request') throw e;
      if (reported) {
        this.log(`the platform did not take the sites' processes (${(e as Error).message}); not sent again`);
        this.processesTaken = false;
        return this.send(call, base, false);
      }
      this.log(`the platform did not take ${sent.length} sleep and wake events (${(e as Error).message}); dropped`);
      this.forget(sent);
      return call(base);
    }
  }

  private forget(sent: SiteEvent[]): void {
    const gone = new Set(sent);
    const left = this.events.filter((e) => !gone.has(e));
    this.events.splice(0, this.events.length, ...left);
  }
}
