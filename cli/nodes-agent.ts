import path from 'node:path';
import { parseArgs } from 'node:util';
import { CliUsageError } from '../core/area';
import { config } from '../core/config';
import { AgentAuthError, NodeAgent } from '../dataplane/agent/agent';

export const NODES_AGENT_USAGE =
  'nodes agent --token TOKEN [--data-dir DIR] [--edge-port N] [--api-url URL] [--executor real|simulated]';

/**
 * `platform nodes agent` (docs/contracts.md, "the data plane"): runs the node agent in the foreground.
 * It touches no database and no Kafka: only the platform's API at `--api-url`. A refused token ends
 * it within 10 s with one sentence on stderr and exit code 1; Ctrl-C stops its sites and its edge.
 * `--executor` (or NODE_AGENT_EXECUTOR) picks the real Ghost executor (default) or the simulated one.
 */
export async function runNodeAgent(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      token: { type: 'string' },
      'data-dir': { type: 'string' },
      'edge-port': { type: 'string' },
      'api-url': { type: 'string' },
      executor: { type: 'string' },
    },
  });
  const token = values.token ?? process.env.NODE_AGENT_TOKEN;
  if (!token) throw new CliUsageError(`nodes agent needs --token TOKEN (usage: ${NODES_AGENT_USAGE})`);
  const edgePort = values['edge-port'] === undefined ? 8083 : Number(values['edge-port']);
  if (!Number.isInteger(edgePort) || edgePort < 0 || edgePort > 65535)
    throw new CliUsageError('--edge-port must be a port number');
  const executor = values.executor ?? process.env.NODE_AGENT_EXECUTOR ?? 'real';
  if (executor !== 'real' && executor !== 'simulated') throw new CliUsageError('--executor must be real or simulated');
  const dataDir = path.resolve(values['data-dir'] ?? path.join(config().DATA_DIR, 'node-agent'));
  const apiUrl = values['api-url'] ?? `http://127.0.0.1:${process.env.BRIDGE_PORT ?? 8080}`;
  const agent = new NodeAgent({
    apiUrl,
    token,
    dataDir,
    edgePort,
    executor,
    simulatedStepDelayMs: process.env.NODE_AGENT_STEP_DELAY_MS ? Number(process.env.NODE_AGENT_STEP_DELAY_MS) : undefined,
    log: (line) => process.stderr.write(`node-agent: ${line}\n`),
  });
  try {
    await agent.start();
  } catch (e) {
    if (e instanceof AgentAuthError) {
      process.stderr.write(`platform: ${e.message}.\n`);
      process.exit(1);
    }
    throw e;
  }
  process.stderr.write(`node-agent: running (executor ${executor}, data ${dataDir}, edge ${agent.edgeUrl}); Ctrl-C stops\n`);
  const shutdown = async () => {
    await agent.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown());
  process.on('SIGTERM', () => void shutdown());
  try {
    await agent.done;
  } catch (e) {
    process.stderr.write(`platform: ${(e as Error).message}.\n`);
    process.exit(1);
  }
}

/** The entry `bin/platform.js` takes for `nodes agent`: no areas and no engines are loaded. */
export async function main(args: string[]): Promise<void> {
  try {
    await runNodeAgent(args);
  } catch (e) {
    process.stderr.write(`platform: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(e instanceof CliUsageError ? 2 : 1);
  }
}
