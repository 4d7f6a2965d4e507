import { parseArgs } from 'node:util';
import { type Role, startPlatform } from '../app/platform';
import { infraDown, infraStatus, infraUp } from '../infra/index';
import { writeOpenApi } from '../rest-bridge/openapi-file';
import { writeComposedSchema } from '../router/compose';
import { config } from '../core/config';
import { connectMongo, ensureIndexes } from '../core/mongo';
import type { Plan, Role as KeyRole } from '../core/principal';
import { IdentityService } from '../subgraphs/identity/service';
import { ConnectedNodes } from '../subgraphs/publisher/nodes';
import { AccountSenders } from '../subgraphs/publisher/senders';

process.env.APOLLO_TELEMETRY_DISABLED = '1';

const USAGE = `usage: platform <command>

  start [all|router|bridge|subgraph NAME] [--with-infra]   run the platform (foreground; Ctrl-C stops)
  compose [--check]                                        regenerate schema/ (or fail when stale)
  infra up|down|status                                     local Kafka and MongoDB-wire server
  keys create --account SLUG [--plan free|pro] [--role owner|member|read_only] [--scopes a,b] [--json]
  projects create --account SLUG --name NAME [--json]
  nodes register --account SLUG --name NAME [--tags k:v,k:v] [--json]
  senders verify --account SLUG --email E [--json]            mark a sender address verified for the account
`;

class UsageError extends Error {}

function fail(message: string): never {
  throw new UsageError(message);
}

/** The `platform` command line. */
export async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'start':
        return await start(rest);
      case 'compose':
        return await compose(rest);
      case 'infra':
        return await infra(rest);
      case 'keys':
        return await keys(rest);
      case 'projects':
        return await projects(rest);
      case 'nodes':
        return await nodes(rest);
      case 'senders':
        return await senders(rest);
      case undefined:
      case 'help':
      case '--help':
        process.stdout.write(USAGE);
        return;
      default:
        fail(`unknown command "${command}"`);
    }
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    process.stderr.write(`platform: ${message}\n`);
    if (e instanceof UsageError) process.stderr.write(`\n${USAGE}`);
    process.exit(1);
  }
}

async function infra(args: string[]): Promise<void> {
  const [sub] = args;
  if (sub === 'up') await infraUp();
  else if (sub === 'down') await infraDown();
  else if (sub === 'status') await infraStatus();
  else fail('infra takes up, down or status');
}

async function compose(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { check: { type: 'boolean' } } });
  const stale = [...(await writeComposedSchema(Boolean(values.check))), ...(await writeOpenApi(Boolean(values.check)))];
  if (values.check && stale.length) {
    throw new Error(`schema/ is stale: ${stale.join(', ')}; run \`npm run compose\` and commit the result`);
  }
  process.stdout.write(stale.length ? `wrote ${stale.join(', ')}\n` : 'schema/ is up to date\n');
}

async function start(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { 'with-infra': { type: 'boolean' } } });
  const [what = 'all', name] = positionals;
  let role: Role;
  if (what === 'all' || what === 'router' || what === 'bridge') role = { kind: what };
  else if (what === 'subgraph' && name) role = { kind: 'subgraph', name };
  else fail('start takes all, router, bridge or subgraph NAME');
  let infraStarted: { mongoStarted: boolean; kafkaStarted: boolean } | undefined;
  if (values['with-infra']) infraStarted = await infraUp();
  const platform = await startPlatform({ role });
  const lines = [
    platform.bridgeUrl && `REST bridge   ${platform.bridgeUrl}  (GET /healthz, /readyz, /api/v1/openapi.json)`,
    platform.routerUrl && `GraphQL       ${platform.routerUrl}  (queries, mutations, graphql-ws subscriptions)`,
    ...Object.entries(platform.subgraphUrls).map(([n, u]) => `subgraph      ${u}  (${n})`),
  ].filter(Boolean);
  process.stderr.write(`platform: running (Ctrl-C stops)\n  ${lines.join('\n  ')}\n`);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`platform: ${signal}, stopping…\n`);
    await platform.stop();
    if (infraStarted && (infraStarted.mongoStarted || infraStarted.kafkaStarted)) {
      await infraDown({ mongo: infraStarted.mongoStarted, kafka: infraStarted.kafkaStarted });
    }
    process.exit(0);
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

/** An identity service on the configured MongoDB, starting the local engines if need be. */
async function withIdentity<T>(fn: (identity: IdentityService, nodes: ConnectedNodes) => Promise<T>): Promise<T> {
  if (!config().externalMongo) await infraUp({ quiet: true });
  const conn = await connectMongo(config().mongodbUri);
  try {
    const identity = new IdentityService(conn);
    const nodes = new ConnectedNodes(conn);
    await ensureIndexes(conn);
    return await fn(identity, nodes);
  } finally {
    await conn.close();
  }
}

function print(json: boolean, value: Record<string, unknown>, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${human}\n`);
}

async function keys(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'create') fail('keys takes create');
  const { values } = parseArgs({
    args: rest,
    options: {
      account: { type: 'string' },
      plan: { type: 'string' },
      role: { type: 'string' },
      scopes: { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  if (!values.account) fail('keys create needs --account SLUG');
  const created = await withIdentity((identity) =>
    identity.createApiKey({
      accountSlug: values.account!,
      plan: values.plan as Plan | undefined,
      role: values.role as KeyRole | undefined,
      scopes: values.scopes ? values.scopes.split(',') : [],
    }),
  );
  print(
    Boolean(values.json),
    {
      key: created.key,
      key_id: created.keyId,
      prefix: created.prefix,
      account: created.accountSlug,
      account_id: created.accountId,
      plan: created.plan,
      role: created.role,
      scopes: created.scopes,
    },
    `key ${created.key}\n(shown once; account ${created.accountSlug}, plan ${created.plan}, role ${created.role})`,
  );
}

async function projects(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'create') fail('projects takes create');
  const { values } = parseArgs({
    args: rest,
    options: { account: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (!values.account || !values.name) fail('projects create needs --account SLUG --name NAME');
  const project = await withIdentity(async (identity) => {
    const account = await identity.ensureAccount(values.account!);
    return identity.createProject(account._id, values.name!);
  });
  print(
    Boolean(values.json),
    { id: project._id, name: project.name, account_id: project.accountId },
    `project ${project._id} (${project.name})`,
  );
}

async function nodes(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'register') fail('nodes takes register');
  const { values } = parseArgs({
    args: rest,
    options: { account: { type: 'string' }, name: { type: 'string' }, tags: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (!values.account || !values.name) fail('nodes register needs --account SLUG --name NAME');
  const node = await withIdentity(async (identity, registry) => {
    const account = await identity.ensureAccount(values.account!);
    return registry.register(account._id, values.name!, values.tags ? values.tags.split(',') : []);
  });
  print(Boolean(values.json), { id: node._id, name: node.name, tags: node.tags }, `node ${node._id} (${node.name})`);
}

async function senders(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub !== 'verify') fail('senders takes verify');
  const { values } = parseArgs({
    args: rest,
    options: { account: { type: 'string' }, email: { type: 'string' }, json: { type: 'boolean' } },
  });
  if (!values.account || !values.email) fail('senders verify needs --account SLUG --email E');
  const sender = await withIdentity(async (identity) => {
    const account = await identity.ensureAccount(values.account!);
    const registry = new AccountSenders(identity.models.Account.db);
    await registry.model.init();
    return registry.verify(account._id, values.email!);
  });
  print(
    Boolean(values.json),
    { email: sender.email, verified: sender.verified, verified_at: sender.verifiedAt, account: values.account },
    `sender ${sender.email} verified for ${values.account}`,
  );
}
