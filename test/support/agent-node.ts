import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { NodeAgent } from '../../dataplane/agent/agent';
import { DataPlane } from '../../dataplane/plane';
import { RuntimeDrivers } from '../../dataplane/runtimes/driver';
import type { SleepOptions } from '../../dataplane/sleep';
import type { TestPlatform } from './platform';
import { staticDriver } from './static-driver';

/** A node for a test platform: a data plane of its own and, once started with a node's token, its agent. */
export interface AgentNode {
  plane: DataPlane;
  /** The agent (the class `platform nodes agent` runs) over HTTP to the platform, for `token`'s node. */
  start(token: string): Promise<NodeAgent>;
  /** Stops the agent and the plane and removes the node's files. */
  stop(): Promise<void>;
}

/**
 * A node whose agent runs the real executor on its own data plane, the test-only folder runtime
 * standing in for Ghost under the catalog's runtime name (its memory floor included); `sleep` turns
 * the plane's sleep keeper on. Heartbeats every 200 ms, so the platform hears of changes at once.
 */
export async function agentNode(t: TestPlatform, label: string, sleep?: SleepOptions): Promise<AgentNode> {
  const root = await mkdtemp(path.join(os.tmpdir(), `${label}-`));
  const plane = new DataPlane({
    edgePort: 0,
    host: '127.0.0.1',
    sitesRoot: path.join(root, 'sites'),
    cacheRoot: path.join(root, 'cache'),
    drivers: new RuntimeDrivers([{ ...staticDriver(path.join(root, 'runtimes')), name: 'ghost' }]),
    ...(sleep ? { sleep } : {}),
  });
  await plane.start();
  let agent: NodeAgent | null = null;
  return {
    plane,
    async start(token) {
      agent = new NodeAgent({
        apiUrl: t.bridgeUrl,
        token,
        dataDir: root,
        edgePort: 0,
        plane,
        executor: 'real',
        heartbeatMs: 200,
        claimWaitMs: 1_000,
      });
      await agent.start();
      return agent;
    },
    async stop() {
      await agent?.stop();
      await plane.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}
