import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sleep } from '../../core/sleep';
import { type NodeExecutor, type NodeExecutorFactory, StepFailure } from '../agent/executors';
import type { AgentSite, AgentTask } from '../agent/wire';
import type { DataPlane } from '../plane';

/**
 * The node agent's stand-in executor (`platform nodes agent --executor simulated`, fast tests;
 * docs/decisions/0170-node-agent.md, 0380): no runtime, no driver; each step takes a fixed time and
 * a started site is a small HTTP server behind the agent's real edge. The agent knows only the
 * executor interface: whoever starts an agent with this stand-in passes it in (`simulatedNodeExecutor`).
 */
export function simulatedNodeExecutor(stepDelayMs?: number): NodeExecutorFactory {
  return (plane) => new SimulatedNodeExecutor(plane, stepDelayMs);
}

/** Timed stand-in steps; a started site is a small HTTP server routed through the agent's real edge. */
export class SimulatedNodeExecutor implements NodeExecutor {
  readonly kind = 'simulated' as const;
  private readonly servers = new Map<string, http.Server>();
  constructor(
    private readonly plane: DataPlane,
    private readonly stepDelayMs = 200,
  ) {}

  async run(task: AgentTask, progress: (line: string) => void): Promise<Record<string, unknown> | null> {
    progress(`simulated ${task.step}`);
    await sleep(this.stepDelayMs);
    const site = task.site;
    switch (task.step) {
      case 'start_runtime':
      case 'rollback':
        await this.start(site);
        return null;
      case 'configure_site':
        // Secrets as a real site's are: random, so a test can look for them wherever they may leak.
        return {
          owner_email: `owner@${new URL(site.url).hostname}`,
          integration_id: `simulated-${site.siteId.slice(0, 8)}`,
          admin_api_key: `simulated:${randomBytes(32).toString('hex')}`,
          owner_password: randomBytes(18).toString('base64url'),
        };
      case 'health_check': {
        const route = this.plane.edge.route(site.hosts[0]);
        if (!route || route.state !== 'running') throw new StepFailure('health_check_failed', 'the site does not answer');
        return null;
      }
      case 'drain_traffic':
        this.plane.edge.setState(site.siteId, 'stopped');
        return null;
      case 'stop_runtime':
        await this.stop(site.siteId);
        return null;
      case 'delete_site':
        await this.stop(site.siteId);
        this.plane.edge.remove({ owner: site.siteId });
        return null;
      default:
        return null;
    }
  }

  async ensure(site: AgentSite, state: 'running' | 'stopped') {
    const up = this.servers.has(site.siteId);
    if (state === 'stopped') {
      if (!up) return 'unchanged' as const;
      await this.stop(site.siteId);
      return 'stopped' as const;
    }
    if (up) return 'unchanged' as const;
    await this.start(site);
    return 'started' as const;
  }

  running(): string[] {
    return [...this.servers.keys()];
  }

  async stopAll(): Promise<void> {
    await this.close();
  }

  private async start(site: AgentSite): Promise<void> {
    await this.stop(site.siteId);
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'x-simulated-site': site.siteId });
      res.end(`<!doctype html><title>${site.name}</title><p>simulated site ${site.slug} (${site.runtime.version})</p>\n`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.servers.set(site.siteId, server);
    const port = (server.address() as AddressInfo).port;
    this.plane.edge.remove({ owner: site.siteId });
    this.plane.edge.upsert(site.hosts, { target: { host: '127.0.0.1', port }, state: 'running', owner: site.siteId });
  }

  private async stop(siteId: string): Promise<void> {
    const server = this.servers.get(siteId);
    if (!server) return;
    this.servers.delete(siteId);
    this.plane.edge.setState(siteId, 'stopped');
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async close(): Promise<void> {
    for (const id of [...this.servers.keys()]) await this.stop(id);
  }
}
