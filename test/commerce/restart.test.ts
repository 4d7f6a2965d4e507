import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Connection } from 'mongoose';
import { productionHost, releaseHost } from '../../dataplane/releases';
import { type RunningStandIn, startCommerceStandIn } from '../../subgraphs/commerce/stand-in';
import { StandInControl } from '../../subgraphs/commerce/stand-in-control';
import { IdentityService } from '../../subgraphs/identity/service';
import { assertBuilt, childPlatformScope } from '../support/child-platform';
import { alive, descendants } from '../support/processes';

/**
 * `kill -9` of the platform (the built `platform start all`) while a production storefront runs:
 * started again, the platform's reconcile at boot (dataplane/releases.ts `reconcileReleases`)
 * starts the live release from its stored artifact and its production address answers again,
 * without a new deploy. Uses dist/.
 */
jest.setTimeout(300_000);

const scope = childPlatformScope();
const SECRET = 'whsec_restart_test_secret_0123456789';
let conn: Connection;
let standIn: RunningStandIn;
let edgePort: number;

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

function viaEdge(host: string): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port: edgePort, path: '/', headers: { host: `${host}:${edgePort}` }, timeout: 5_000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0))
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy();
      });
  });
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, ms: number): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const startChild = () =>
  scope.start({
    env: {
      COMMERCE_PLATFORM_URL: standIn.url,
      COMMERCE_WEBHOOK_SECRET: SECRET,
      EDGE_PORT: String(edgePort),
      COMMERCE_HEALTH_GATE_MS: '30000',
      SIMULATED_STEP_DELAY_MS: '40',
    },
  });

beforeAll(async () => {
  assertBuilt();
  conn = await scope.connect({ indexes: true });
  standIn = await startCommerceStandIn({ mongodbUri: scope.dbUri, webhookSecret: SECRET, host: '127.0.0.1', port: 0 });
  edgePort = await freePort();
});
afterAll(async () => {
  await scope.cleanup();
  await standIn?.stop();
});

it('kill -9 and restart: the production address and the live preview answer again from the stored artifact, with no new deploy', async () => {
  let running = await startChild();
  const identity = new IdentityService(conn);
  const { key, accountId } = await identity.createApiKey({ accountSlug: `restart-${scope.id}`, plan: 'pro' });
  const project = await identity.createProject(accountId, `shop-${scope.id}`);
  const store = await new StandInControl(() => standIn.url).createStore(`restart-${scope.id}.example`);
  const B = `/api/v1/projects/${project._id}/commerce`;
  const rest = async (method: string, p: string, body?: unknown, raw?: Buffer) => {
    const res = await fetch(`${running.bridgeUrl}${p}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': raw ? 'application/x-tar' : 'application/json',
      },
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  const connect = await rest('POST', `${B}/connect`, {
    kind: 'storefront',
    store_domain: store.store_domain,
    confirm_generic_storefront: true,
  });
  expect(connect.status).toBe(202);
  await until(
    'the connection',
    async () =>
      ['succeeded', 'failed'].includes((await rest('GET', `${B}/operations/${connect.body.data.id}`)).body.data?.status),
    90_000,
  );

  const build = mkdtempSync(path.join(tmpdir(), 'bundle-restart-'));
  cpSync(path.join(__dirname, '..', 'fixtures', 'commerce', 'storefront'), build, { recursive: true });
  writeFileSync(path.join(build, 'build-id.txt'), randomUUID());
  const tar = execFileSync('tar', ['-cf', '-', '-C', build, '.']);
  rmSync(build, { recursive: true, force: true });
  const up = await rest('PUT', `${B}/artifacts`, undefined, tar);
  expect(up.status).toBe(201);
  const created = await rest('POST', `${B}/releases`, { environment: 'production', artifact: up.body.data.artifact });
  expect(created.status).toBe(202);
  const releaseId = created.body.data.id as string;
  const status = async (id: string) =>
    (await rest('GET', `${B}/releases`)).body.data.items.find((r: { id: string }) => r.id === id)?.status;
  await until('the release to be healthy', async () => (await status(releaseId)) === 'healthy', 90_000);
  await until('the production address', async () => (await viaEdge(productionHost(project._id))) === 200, 10_000);
  // A live preview of the same build, on its own address.
  const preview = await rest('POST', `${B}/releases`, { environment: 'preview', artifact: up.body.data.artifact });
  expect(preview.status).toBe(202);
  const previewId = preview.body.data.id as string;
  await until('the preview to be healthy', async () => (await status(previewId)) === 'healthy', 90_000);

  await running.kill();
  // The edge goes with the platform: nginx's master at once (its parent died), its workers moments
  // later, when the reaper sees the platform's pipe close (docs/decisions/0320-edge-route-links.md).
  await until('the edge to stop answering', async () => (await viaEdge(productionHost(project._id))) === 0, 10_000);
  expect(await viaEdge(releaseHost(previewId))).toBe(0);

  running = await startChild();
  await until(
    'the production address after the restart',
    async () => (await viaEdge(productionHost(project._id))) === 200,
    90_000,
  );
  await until('the live preview after the restart', async () => (await viaEdge(releaseHost(previewId))) === 200, 90_000);
  // No new deploy: the same two releases, both healthy.
  const list = (await rest('GET', `${B}/releases`)).body.data.items as Array<{ id: string; status: string }>;
  expect(list.map((r) => [r.id, r.status]).sort()).toEqual(
    [
      [releaseId, 'healthy'],
      [previewId, 'healthy'],
    ].sort(),
  );
  await running.kill();
});

it('kill -9 leaves no supervised process behind: an app bundle release and the storefronts stop with the platform', async () => {
  // The data plane's supervisor gives every child a parent watch (dataplane/supervisor-preload.ts).
  const running = await startChild();
  const identity = new IdentityService(conn);
  const { key, accountId } = await identity.createApiKey({ accountSlug: `orphans-${scope.id}`, plan: 'pro' });
  const project = await identity.createProject(accountId, `app-${scope.id}`);
  const store = await new StandInControl(() => standIn.url).createStore(`orphans-${scope.id}.example`);
  const B = `/api/v1/projects/${project._id}/commerce`;
  const rest = async (method: string, p: string, body?: unknown, raw?: Buffer) => {
    const res = await fetch(`${running.bridgeUrl}${p}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': raw ? 'application/x-tar' : 'application/json' },
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const connect = await rest('POST', `${B}/connect`, {
    kind: 'app',
    store_domain: store.store_domain,
    development_branch: 'main',
  });
  expect(connect.status).toBe(202);
  await until(
    'the app connection',
    async () => (await rest('GET', `${B}/operations/${connect.body.data.id}`)).body.data?.status === 'succeeded',
    90_000,
  );
  expect(
    (
      await rest('PUT', `${B}/environments/development`, {
        app_url: 'https://app.example.com',
        client_id: 'client-id-1',
        client_secret: 'client-secret-value-5521',
        scopes: 'read_products',
      })
    ).status,
  ).toBeLessThan(300);
  const tar = execFileSync('tar', ['-cf', '-', '-C', path.join(__dirname, '..', 'fixtures', 'commerce', 'app'), '.']);
  const up = await rest('PUT', `${B}/artifacts`, undefined, tar);
  // 200 when an earlier run stored the same bytes (the fixture's archive is reproducible).
  expect([200, 201]).toContain(up.status);
  const created = await rest('POST', `${B}/releases`, { environment: 'development', artifact: up.body.data.artifact });
  expect(created.status).toBe(202);
  const releaseId = created.body.data.id as string;
  await until(
    'the app release to be healthy',
    async () =>
      (await rest('GET', `${B}/releases`)).body.data.items.find((r: { id: string }) => r.id === releaseId)?.status === 'healthy',
    90_000,
  );
  await until('the app on its address', async () => (await viaEdge(releaseHost(releaseId))) === 200, 10_000);

  const below = descendants(running.proc.pid!);
  const cmdline = (p: number) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'utf8');
    } catch {
      return '';
    }
  };
  // The app's node (its script is in the release's directory, named by the release id).
  expect(below.filter((p) => cmdline(p).includes(releaseId)).length).toBeGreaterThan(0);
  await running.kill();
  const left = await until(
    'every process the platform ran to stop',
    async () => (below.some(alive) ? null : 'none'),
    5_000,
  ).catch(() => below.filter(alive));
  for (const pid of Array.isArray(left) ? left : []) process.kill(pid, 'SIGKILL');
  expect(left).toBe('none');
});
