import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { CliUsageError } from '../core/area';
import { config } from '../core/config';
import { AgentAuthError, NodeAgent } from '../dataplane/agent/agent';
import { idleSleepMsFromEnv, siteMemoryMbFromEnv } from '../dataplane/sleep';
import { simulatedNodeExecutor } from '../dataplane/stand-in/simulated-executor';

export const NODES_AGENT_USAGE =
  'nodes agent [--token-file FILE] [--data-dir DIR] [--edge-port N] [--api-url URL] [--executor real|simulated] [--memory-mb N]';

/** Where the agent's token comes from when no flag names it. */
export const NODE_TOKEN_ENV = 'PLATFORM_NODE_TOKEN';

/**
 * The node token (docs/decisions/0270-node-tokens-and-task-secrets.md): from `--token-file FILE`
 * (its first line), else PLATFORM_NODE_TOKEN (NODE_AGENT_TOKEN, its earlier name, still read).
 * `--token TOKEN` still works, with a warning: a command line is in every user's process list.
 */
export async function agentToken(
  values: { token?: string; 'token-file'?: string },
  env: NodeJS.ProcessEnv,
  warn: (line: string) => void,
): Promise<string> {
  if (values.token !== undefined && values['token-file'] !== undefined)
    throw new CliUsageError('nodes agent takes --token-file FILE or --token TOKEN, not both');
  if (values['token-file'] !== undefined) {
    const file = values['token-file'];
    const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
      throw new CliUsageError(`--token-file ${file} cannot be read (${e.code ?? e.message})`);
    });
    const token = text.split('\n')[0].trim();
    if (!token) throw new CliUsageError(`--token-file ${file} holds no token`);
    return token;
  }
  if (values.token !== undefined) {
    warn(
      `platform: warning: --token shows the node token in the process list (ps) of every user of this machine; put it in ${NODE_TOKEN_ENV} or in a file named by --token-file instead`,
    );
    return values.token;
  }
  const token = env[NODE_TOKEN_ENV] || env.NODE_AGENT_TOKEN;
  if (!token)
    throw new CliUsageError(
      `nodes agent needs its node token in ${NODE_TOKEN_ENV} or --token-file FILE (usage: ${NODES_AGENT_USAGE})`,
    );
  return token;
}

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
      'token-file': { type: 'string' },
      'data-dir': { type: 'string' },
      'edge-port': { type: 'string' },
      'api-url': { type: 'string' },
      executor: { type: 'string' },
      'memory-mb': { type: 'string' },
    },
  });
  const token = await agentToken(values, process.env, (line) => process.stderr.write(`${line}\n`));
  // The sites this agent starts inherit nothing of it.
  delete process.env[NODE_TOKEN_ENV];
  delete process.env.NODE_AGENT_TOKEN;
  const edgePort = values['edge-port'] === undefined ? 8083 : Number(values['edge-port']);
  if (!Number.isInteger(edgePort) || edgePort < 0 || edgePort > 65535)
    throw new CliUsageError('--edge-port must be a port number');
  const executor = values.executor ?? process.env.NODE_AGENT_EXECUTOR ?? 'real';
  if (executor !== 'real' && executor !== 'simulated') throw new CliUsageError('--executor must be real or simulated');
  const dataDir = path.resolve(values['data-dir'] ?? path.join(config().DATA_DIR, 'node-agent'));
  const apiUrl = values['api-url'] ?? `http://127.0.0.1:${process.env.BRIDGE_PORT ?? 8080}`;
  // Sleep and wake on this node (dataplane/sleep.ts): its own memory bound for awake sites.
  const memoryMb = values['memory-mb'] === undefined ? siteMemoryMbFromEnv(process.env, true) : Number(values['memory-mb']);
  if (memoryMb !== null && (!Number.isInteger(memoryMb) || memoryMb < 1))
    throw new CliUsageError('--memory-mb must be a positive number of MiB');
  const agent = new NodeAgent({
    apiUrl,
    token,
    dataDir,
    edgePort,
    // The simulated executor is a stand-in this command passes in: the agent knows only the interface.
    executor:
      executor === 'real'
        ? 'real'
        : simulatedNodeExecutor(process.env.NODE_AGENT_STEP_DELAY_MS ? Number(process.env.NODE_AGENT_STEP_DELAY_MS) : undefined),
    sleep: { idleMs: idleSleepMsFromEnv(process.env), memoryMb, log: (line) => process.stderr.write(`node-agent: ${line}\n`) },
    // Commerce releases the platform sends this node (the hosted node's: decision 0365), under the data folder.
    releaseHost: { releasesRoot: path.join(dataDir, 'releases') },
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
