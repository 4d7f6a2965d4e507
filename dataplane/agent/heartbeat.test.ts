import { EventEmitter } from 'node:events';
import type { SiteHost, SiteProcess } from '../sites';
import { HeartbeatReport } from './heartbeat';
import type { AgentBody, HeartbeatReply } from './wire';

/**
 * What a heartbeat carries (docs/decisions/0350-node-power-events.md, 0385-connected-site-process.md):
 * the sleeps and wakes until the platform took them, and the processes of the sites the plane runs in
 * the wire's spelling; a platform older than the processes refuses them once and is not sent them again.
 */
const proc: SiteProcess = {
  status: 'running',
  restarts: 2,
  lastExit: { code: null, signal: 'SIGKILL', at: '2026-01-01T00:00:00.000Z' },
  memoryFloorMb: 512,
  startedAt: '2026-01-01T00:00:01.000Z',
  sleptAt: null,
};
const reply: HeartbeatReply = {
  node_id: 'n',
  name: 'n',
  status: 'reachable',
  heartbeat_interval_ms: 5_000,
  silent_after_ms: 30_000,
};
const base = { edge_port: 8083, session: 'session-1' };

function sites() {
  const power = new EventEmitter();
  return { power, processes: () => [{ siteId: 'site-1', ...proc }] } as unknown as Pick<SiteHost, 'processes' | 'power'> & {
    power: EventEmitter;
  };
}

const refused = () => Object.assign(new Error('site_processes: unrecognized'), { code: 'invalid_request' });

describe('the heartbeat report', () => {
  it("sends the plane's processes in the wire's spelling when asked, and none otherwise", async () => {
    const bodies: Array<AgentBody<'heartbeat'>> = [];
    const report = new HeartbeatReport(sites(), false, () => undefined);
    const call = async (b: AgentBody<'heartbeat'>) => (bodies.push(b), reply);
    await report.send(call, base, true);
    await report.send(call, base, false);
    expect(bodies).toEqual([
      {
        ...base,
        site_processes: [
          {
            site_id: 'site-1',
            status: 'running',
            restarts: 2,
            last_exit: { code: null, signal: 'SIGKILL', at: '2026-01-01T00:00:00.000Z' },
            memory_floor_mb: 512,
            started_at: '2026-01-01T00:00:01.000Z',
            slept_at: null,
          },
        ],
      },
      base,
    ]);
  });

  it('a platform that refuses the processes gets the events without them, and no processes again', async () => {
    const s = sites();
    const bodies: Array<AgentBody<'heartbeat'>> = [];
    const report = new HeartbeatReport(s, true, () => undefined);
    s.power.emit('slept', { siteId: 'site-1', at: '2026-01-01T00:00:02.000Z', reason: 'idle' });
    const call = async (b: AgentBody<'heartbeat'>) => {
      bodies.push(b);
      if (b.site_processes) throw refused();
      return reply;
    };
    await report.send(call, base, true);
    await report.send(call, base, true);
    expect(bodies.map((b) => [Boolean(b.site_processes), b.site_events?.length ?? 0])).toEqual([
      [true, 1],
      [false, 1],
      [false, 0],
    ]);
  });
});
