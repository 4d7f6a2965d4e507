import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type AgentTransport, NodeAgent } from '../../dataplane/agent/agent';
import { DataPlane } from '../../dataplane/plane';
import { simulatedNodeExecutor } from '../../dataplane/stand-in/simulated-executor';

/**
 * The agent's side of a connected node's sleeps and wakes (docs/decisions/0350-node-power-events.md):
 * its own plane's `power` events go with the next heartbeat, stay queued while heartbeats fail, and
 * an agent on the platform's own plane (the hosted node) sends none. The platform's side is
 * test/publisher/node-agent.test.ts. Here the platform is a transport that records the heartbeats.
 */

let dir: string;
const agents: NodeAgent[] = [];
const planes: DataPlane[] = [];
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'agent-site-events-'));
});
afterAll(async () => {
  for (const a of agents) await a.stop();
  for (const p of planes) await p.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A platform that answers every call, failing the heartbeats while `failing` is set. */
function platform() {
  const beats: Array<{ site_events?: unknown[] }> = [];
  const state = { failing: false };
  const transport: AgentTransport = async (method, p, body) => {
    if (p === '/heartbeat') {
      beats.push(body as { site_events?: unknown[] });
      if (state.failing) return { status: 503, body: { success: false, error: { code: 'unavailable', message: 'down' } } };
      const data = { node_id: 'n1', name: 'n', status: 'reachable', heartbeat_interval_ms: 20, silent_after_ms: 45_000 };
      return { status: 200, body: { success: true, data } };
    }
    if (p === '/sites') return { status: 200, body: { success: true, data: { sites: [] } } };
    return { status: 200, body: { success: true, data: { task: null } } };
  };
  return { beats, state, transport };
}

const until = async (what: string, fn: () => boolean, ms = 5_000) => {
  const deadline = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const slept = { siteId: 's1', at: '2026-12-05T18:00:00.000Z', reason: 'idle' as const };
const woke = { siteId: 's1', at: '2026-12-05T18:00:05.000Z', ms: 812.4 };

it('sends its own plane’s sleeps and wakes with the next heartbeat, again after a failed one, then no more', async () => {
  const p = platform();
  const agent = new NodeAgent({
    apiUrl: 'http://unused',
    token: 't',
    dataDir: path.join(dir, 'own'),
    edgePort: 0,
    executor: simulatedNodeExecutor(),
    transport: p.transport,
    heartbeatMs: 20,
    claimWaitMs: 0,
  });
  agents.push(agent);
  await agent.start();
  p.state.failing = true;
  agent.plane.sites.power.emit('slept', slept);
  await until('a failed heartbeat with the sleep', () => p.beats.some((b) => b.site_events?.length === 1));
  agent.plane.sites.power.emit('woke', woke);
  const failedSoFar = p.beats.length;
  p.state.failing = false;
  await until('a heartbeat with both', () => p.beats.slice(failedSoFar).some((b) => b.site_events?.length === 2));
  const withBoth = p.beats.findIndex((b, i) => i >= failedSoFar && b.site_events?.length === 2);
  expect(p.beats[withBoth].site_events).toEqual([
    { site_id: 's1', kind: 'slept', reason: 'idle', at: slept.at },
    { site_id: 's1', kind: 'woke', wake_ms: 812, at: woke.at },
  ]);
  await until('two more heartbeats', () => p.beats.length > withBoth + 2);
  // Taken by the platform: not sent again.
  expect(p.beats.slice(withBoth + 1).every((b) => b.site_events === undefined)).toBe(true);
});

it('sends none from an agent on the platform’s own plane (the hosted node: published in-process)', async () => {
  const p = platform();
  const plane = new DataPlane({ edgePort: 0, host: '127.0.0.1', sitesRoot: path.join(dir, 'hosted-sites') });
  planes.push(plane);
  await plane.start();
  const agent = new NodeAgent({
    apiUrl: 'http://unused',
    token: 't',
    dataDir: path.join(dir, 'hosted'),
    edgePort: 0,
    executor: simulatedNodeExecutor(),
    plane,
    platformPlane: true,
    transport: p.transport,
    heartbeatMs: 20,
    claimWaitMs: 0,
  });
  agents.push(agent);
  await agent.start();
  plane.sites.power.emit('slept', slept);
  await until('three heartbeats', () => p.beats.length > 3);
  expect(p.beats.every((b) => b.site_events === undefined)).toBe(true);
});
