import { type CliCommand, CliUsageError } from '../../core/area';
import type { PublisherServices } from './area-services';
import { nodeView } from '../../nodes/registry';

const viewJson = (v: ReturnType<typeof nodeView>) => ({
  id: v.id,
  name: v.name,
  tags: v.tags,
  status: v.status,
  last_heartbeat_at: v.lastHeartbeatAt?.toISOString() ?? null,
  edge_port: v.edgePort,
  created_at: v.createdAt.toISOString(),
});

/** How the agent is started with a token, without showing it in the process list. */
const runHint = 'run the agent with it in PLATFORM_NODE_TOKEN, or in a file: npx platform nodes agent --token-file FILE';

/**
 * `nodes register|list|drain|rotate-token|remove` (docs/contracts.md, "the data plane" and "tenant
 * isolation"); the rules are the service's (nodes.ts); `nodes agent` is cli/nodes-agent.ts.
 */
export const nodeCliCommands: CliCommand<PublisherServices>[] = [
  {
    words: ['nodes', 'register'],
    usage: '--account SLUG --name NAME [--tags k:v,k:v]',
    options: { account: { type: 'string' }, name: { type: 'string' }, tags: { type: 'string' } },
    required: ['account', 'name'],
    async run({ values, services, ctx }) {
      if (typeof values.account !== 'string' || typeof values.name !== 'string') {
        throw new CliUsageError('nodes register needs --account SLUG --name NAME');
      }
      const account = await ctx.ports.get('projects').ensureAccount(values.account);
      const tags = typeof values.tags === 'string' ? values.tags.split(',').filter(Boolean) : [];
      const node = await services.nodes.register(account.id, values.name, tags);
      // The token is shown here once; the platform keeps only its hash.
      return { id: node._id, name: node.name, tags: node.tags, token: node.token };
    },
    describe: (r) => `node ${r.id} (${r.name})\ntoken (shown once): ${r.token}\n${runHint}`,
  },
  {
    words: ['nodes', 'list'],
    usage: '--account SLUG',
    options: { account: { type: 'string' } },
    required: ['account'],
    async run({ values, services, ctx }) {
      const account = await ctx.ports.get('projects').ensureAccount(String(values.account));
      return { nodes: (await services.nodes.list(account.id)).map(viewJson) };
    },
    describe: (r: { nodes: Array<ReturnType<typeof viewJson>> }) =>
      r.nodes.map((n) => `${n.id}  ${n.status.padEnd(11)}  ${n.name}  ${n.tags.join(',')}`).join('\n') || 'no nodes',
  },
  {
    words: ['nodes', 'drain'],
    usage: '--account SLUG --node ID',
    options: { account: { type: 'string' }, node: { type: 'string' } },
    required: ['account', 'node'],
    async run({ values, services, ctx }) {
      const account = await ctx.ports.get('projects').ensureAccount(String(values.account));
      return viewJson(await services.nodes.drain(account.id, String(values.node)));
    },
    describe: (r) => `node ${r.id} is ${r.status}: it keeps its sites and takes no new ones`,
  },
  {
    words: ['nodes', 'rotate-token'],
    usage: '--node ID',
    options: { node: { type: 'string' } },
    required: ['node'],
    async run({ values, services }) {
      const { node, token } = await services.nodes.rotateToken(String(values.node));
      // Shown here once; the old token is refused from now on.
      return { id: node._id, name: node.name, token };
    },
    describe: (r) =>
      `node ${r.id} (${r.name}): the old token is refused from now on\nnew token (shown once): ${r.token}\n${runHint}`,
  },
  {
    words: ['nodes', 'remove'],
    usage: '--node ID',
    options: { node: { type: 'string' } },
    required: ['node'],
    async run({ values, services }) {
      return services.nodes.remove(String(values.node));
    },
    describe: (r) => `node ${r.id} removed; its token is refused from now on`,
  },
];
