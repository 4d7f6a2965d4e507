/**
 * What idle connected nodes cost the platform (docs/decisions/0170-node-agent.md): 100 node agents
 * (the real agent code, `dataplane/agent/agent.ts`, simulated executor, no sites) heartbeat every
 * 5 s and ask for work every 1 s against one platform process. The agents run in a child process,
 * so the figures are the platform's alone: its CPU (process.cpuUsage, all threads) and the MongoDB
 * commands its driver sends (core/telemetry/mongo.ts counts them), each as a rate over a measured window, first
 * with no agents (baseline), then with the agents connected.
 *
 *   npm run -s build && node dist/bench/node-heartbeats.js   (BENCH_AGENTS=100 BENCH_WINDOW_MS=30000)
 */
import 'reflect-metadata';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { mongoCommandsSent } from '../core/telemetry/mongo';
import { NodeAgent } from '../dataplane/agent/agent';
import { simulatedNodeExecutor } from '../dataplane/stand-in/simulated-executor';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 100);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 30_000);

async function child(): Promise<void> {
  const { apiUrl, tokens } = JSON.parse(process.env.BENCH_NODE_AGENTS!) as { apiUrl: string; tokens: string[] };
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-agents-'));
  const agents = tokens.map(
    (token, i) =>
      new NodeAgent({ apiUrl, token, dataDir: path.join(dir, String(i)), edgePort: 0, executor: simulatedNodeExecutor() }),
  );
  // Started over one heartbeat period, as agents of separate machines would be.
  await Promise.all(agents.map((a, i) => new Promise((r) => setTimeout(r, (i * 5_000) / agents.length)).then(() => a.start())));
  process.send?.('ready');
  process.on('SIGTERM', () => void Promise.all(agents.map((a) => a.stop())).finally(() => process.exit(0)));
}

async function main(): Promise<void> {
  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const dbUri = base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_${id}$1`);
  const config = loadConfig({
    ...process.env,
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '100000000',
    PUBLISHER_EXECUTOR: 'simulated',
    MONGODB_URI: dbUri,
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    cdnPort: 0,
    subgraphBasePort: 0,
    topicPrefix: `bench${id}`,
  });
  const window = async (label: string) => {
    const c0 = mongoCommandsSent();
    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const secs = (Date.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const fig = {
      label,
      commandsPerSec: (mongoCommandsSent() - c0) / secs,
      cpuPercent: ((cpu.user + cpu.system) / 1000 / (secs * 1000)) * 100,
    };
    console.log(
      `${label.padEnd(22)} ${fig.commandsPerSec.toFixed(1).padStart(8)} Mongo commands/s  ${fig.cpuPercent.toFixed(1).padStart(6)} % CPU (one core = 100)`,
    );
    return fig;
  };
  try {
    const nodes = platform.services.publisher.nodes;
    const account = await platform.ports.get('projects').ensureAccount(`bench-nodes-${id}`);
    const tokens: string[] = [];
    for (let i = 0; i < AGENTS; i++) tokens.push((await nodes.register(account.id, `bench-${i}`, ['bench:yes'])).token);
    await new Promise((r) => setTimeout(r, 5_000));
    const idle = await window('no agents');
    const proc = spawn(process.execPath, [__filename, '--child'], {
      env: { ...process.env, LOG_LEVEL: 'silent', BENCH_NODE_AGENTS: JSON.stringify({ apiUrl: platform.bridgeUrl, tokens }) },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    await new Promise<void>((resolve) => proc.on('message', () => resolve()));
    await new Promise((r) => setTimeout(r, 5_000));
    const loaded = await window(`${AGENTS} agents`);
    const reachable = (await nodes.list(account.id)).filter((n) => n.status === 'reachable').length;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.on('exit', r));
    const dc = loaded.commandsPerSec - idle.commandsPerSec;
    const dcpu = loaded.cpuPercent - idle.cpuPercent;
    console.log(
      `overhead of ${AGENTS} idle agents: +${dc.toFixed(1)} commands/s (${(dc / AGENTS).toFixed(2)} per agent; expected 1.2: a heartbeat per 5 s + a claim per 1 s), +${dcpu.toFixed(1)} % CPU; ${reachable}/${AGENTS} nodes reachable`,
    );
  } finally {
    await platform.conn.dropDatabase().catch(() => undefined);
    await platform.stop();
  }
}

if (process.argv.includes('--child')) void child();
else
  void main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
