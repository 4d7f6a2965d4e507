import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { projectRoot } from '../../core/paths';
import { productionHost, releaseHost } from '../../dataplane/releases';
import { ARTIFACT_REGION, ARTIFACT_RETENTION_MS } from '../../subgraphs/commerce/artifacts';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { base, cli, commerce, connectApp, connectStorefront, releasesOn, tenant, waitRelease } from './support';

/**
 * Commerce releases run for real (docs/decisions/0130-commerce-runtime.md): fixture bundles deployed
 * through `commerce deploy --bundle`, a storefront in workerd and an app in Node behind the edge,
 * the health gate probing through the edge, promotion switching the production address, analytics
 * and the degraded rule from the requests the edge served.
 */
jest.setTimeout(240_000);

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'commerce');

let t: TestPlatform;
let edgePort: number;

beforeAll(async () => {
  t = await startTestPlatform({ COMMERCE_HEALTH_GATE_MS: '8000' });
  edgePort = Number(new URL(t.platform.edgeUrl!).port);
});
afterAll(async () => {
  await t?.stop();
});

/** A request to the edge with a site's `Host` (Node's resolver does not resolve `*.localhost` names here). */
function viaEdge(host: string, urlPath = '/'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: edgePort, path: urlPath, headers: { host: `${host}:${edgePort}` } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A build of its own (the blob store outlives test runs): the fixture plus a build id. */
function build2(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'bundle-orphan-'));
  cpSync(path.join(FIXTURES, 'storefront'), dir, { recursive: true });
  writeFileSync(path.join(dir, 'build-id.txt'), randomUUID());
  return dir;
}

const SECRETS = {
  session_secret: 'session-secret-value-9f3e1c',
  private_storefront_token: 'private-token-value-77ab',
};

describe('commerce releases on the data plane', () => {
  it('a storefront bundle runs in workerd: env names reach it, values never reach the API; same bytes, one artifact', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const B = base(tn.projectId);
    const put = await t.rest('PUT', `${B}/environments/preview`, {
      key: tn.key,
      body: { storefront_id: '3f2b8c1e-6d4a-4e8b-9c2d-1a2b3c4d5e6f', ...SECRETS },
    });
    expect(put.status).toBe(200);

    const first = await cli(t, 'commerce deploy', {
      project: tn.projectId,
      environment: 'preview',
      bundle: path.join(FIXTURES, 'storefront'),
    });
    expect(first).toMatchObject({ release_id: expect.any(String), preview_id: first.release_id });
    expect(first.url).toBe(`http://${first.release_id}.releases.localhost:${edgePort}/`);
    const r = await waitRelease(t, tn.key, tn.projectId, first.release_id, 60_000);
    expect(r).toMatchObject({ status: 'healthy', error_code: null });

    const page = await viaEdge(releaseHost(first.release_id));
    expect(page.status).toBe(200);
    expect(JSON.parse(page.body)).toEqual({
      kind: 'storefront',
      path: '/',
      env_names: ['PRIVATE_STOREFRONT_API_TOKEN', 'PUBLIC_STOREFRONT_ID', 'PUBLIC_STORE_DOMAIN', 'SESSION_SECRET'],
    });
    // The commerce platform (here the loopback stand-in) through the storefront's one binding to it
    // (its global fetch() reaches public addresses only: docs/decisions/0272-edge-and-egress-hardening.md).
    const viaBinding = JSON.parse((await viaEdge(releaseHost(first.release_id), '/commerce')).body);
    expect(viaBinding).toMatchObject({ status: 200, body: { domain: tn.store.store_domain } });

    // The environment changes after the release started: the running release keeps what it pinned.
    await t.rest('PUT', `${B}/environments/preview`, { key: tn.key, body: { storefront_id: null } });
    expect(JSON.parse((await viaEdge(releaseHost(first.release_id))).body).env_names).toContain('PUBLIC_STOREFRONT_ID');

    // Same bytes: the same artifact, stored once.
    const again = await commerce(t).artifacts.pack(path.join(FIXTURES, 'storefront'), { accountId: tn.accountId, quota: null });
    expect(again).toMatchObject({ sha256: first.artifact });
    // The artifact lives in the blob store (core/blobs/, filesystem adapter here), not as a loose file
    // (a loose file of the earlier layout is moved into the store when the platform starts).
    const sha: string = first.artifact;
    const data = path.resolve(projectRoot(), '.data', 'commerce');
    expect(existsSync(path.join(data, 'blobs', ARTIFACT_REGION, 'blobs', sha.slice(0, 2), sha))).toBe(true);
    expect(existsSync(path.join(data, 'artifacts', `${sha}.tar`))).toBe(false);

    // A bundle uploaded over HTTP, then released over REST (both recorded in docs/spec-decisions.md).
    // A build of its own (the artifact store outlives test runs): the fixture plus a build id.
    const build = mkdtempSync(path.join(tmpdir(), 'bundle-'));
    cpSync(path.join(FIXTURES, 'storefront'), build, { recursive: true });
    writeFileSync(path.join(build, 'build-id.txt'), randomUUID());
    const tar = execFileSync('tar', ['-cf', '-', '-C', build, '.']);
    rmSync(build, { recursive: true, force: true });
    const upload = (body: Buffer, key: string | null) =>
      fetch(`${t.platform.bridgeUrl}${B}/artifacts`, {
        method: 'PUT',
        headers: { 'content-type': 'application/x-tar', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body,
      });
    expect((await upload(tar, null)).status).toBe(401);
    expect((await upload(Buffer.from('not a tar archive'), tn.key)).status).toBe(422);
    const linkDir = mkdtempSync(path.join(tmpdir(), 'bundle-link-'));
    symlinkSync('/etc', path.join(linkDir, 'escape'));
    expect((await upload(execFileSync('tar', ['-cf', '-', '-C', linkDir, '.']), tn.key)).status).toBe(422);
    rmSync(linkDir, { recursive: true, force: true });
    const up = await upload(tar, tn.key);
    expect(up.status).toBe(201);
    const artifact = ((await up.json()) as { data: { artifact: string } }).data.artifact;
    // The same answer for bytes already stored (decision 0271: no existence oracle).
    expect((await upload(tar, tn.key)).status).toBe(201);
    const created = await t.rest('POST', `${B}/releases`, {
      key: tn.key,
      body: { environment: 'preview', artifact },
    });
    expect(created.status).toBe(202);
    expect(created.body.data).toMatchObject({ artifact, environment: 'preview' });
    expect(created.body.data.url).toBe(`http://${created.body.data.id}.releases.localhost:${edgePort}/`);
    expect((await waitRelease(t, tn.key, tn.projectId, created.body.data.id, 60_000)).status).toBe('healthy');
    const unknown = await t.rest('POST', `${B}/releases`, {
      key: tn.key,
      body: { environment: 'preview', artifact: 'f'.repeat(64) },
    });
    expect(unknown.status).toBe(404);

    // Retention: an artifact no release names goes once it was last used over 24 h ago; a named one stays.
    const orphan = await commerce(t).artifacts.pack(build2(), { accountId: tn.accountId, quota: null });
    expect(await commerce(t).artifacts.has(orphan.sha256)).toBe(true);
    const { Artifact, ArtifactOwner } = commerce(t).models;
    const old = new Date(Date.now() - ARTIFACT_RETENTION_MS - 60_000);
    await Artifact.updateMany({ _id: { $in: [orphan.sha256, artifact, sha] } }, { $set: { usedAt: old } });
    await ArtifactOwner.updateMany(
      { accountId: tn.accountId, artifact: { $in: [orphan.sha256, artifact, sha] } },
      { $set: { usedAt: old } },
    );
    const swept = await commerce(t).artifacts.sweep();
    expect(swept).toContain(orphan.sha256);
    expect(swept).not.toContain(artifact);
    expect(swept).not.toContain(sha);
    expect(await commerce(t).artifacts.has(orphan.sha256)).toBe(false);
    expect(await commerce(t).artifacts.has(artifact)).toBe(true);
    // A superseded preview (a newer one of the project turned healthy) is stopped, its directory removed.
    await until('the superseded preview to stop', async () => !releasesOn(t).running(first.release_id));
    expect(existsSync(releasesOn(t).releaseDir(first.release_id))).toBe(false);
    expect(existsSync(releasesOn(t).releaseDir(created.body.data.id))).toBe(true);

    const answers = [
      await t.rest('GET', `${B}/releases`, { key: tn.key }),
      await t.rest('GET', B, { key: tn.key }),
      await t.rest('GET', `${B}/operations/${r.operation_id}`, { key: tn.key }),
    ];
    for (const a of answers) {
      expect(a.status).toBe(200);
      for (const v of Object.values(SECRETS)) expect(JSON.stringify(a.body)).not.toContain(v);
    }
  });

  it('an app bundle runs under node on PORT with its env names', async () => {
    const tn = await tenant(t);
    await connectApp(t, tn);
    const B = base(tn.projectId);
    await t.rest('PUT', `${B}/environments/development`, {
      key: tn.key,
      body: {
        app_url: 'https://app.example.com',
        client_id: 'client-id-1',
        client_secret: 'client-secret-value-5521',
        scopes: 'read_products',
      },
    });
    const out = await cli(t, 'commerce deploy', {
      project: tn.projectId,
      environment: 'development',
      bundle: path.join(FIXTURES, 'app'),
    });
    expect(out.preview_id).toBeUndefined();
    expect((await waitRelease(t, tn.key, tn.projectId, out.release_id, 60_000)).status).toBe('healthy');
    const page = JSON.parse((await viaEdge(releaseHost(out.release_id))).body);
    expect(page).toMatchObject({
      kind: 'app',
      env_names: ['SHOPIFY_API_KEY', 'SHOPIFY_API_SECRET', 'SCOPES', 'SHOPIFY_APP_URL'],
    });
    const list = await t.rest('GET', `${B}/releases`, { key: tn.key });
    expect(JSON.stringify(list.body)).not.toContain('client-secret-value-5521');
  });

  it('a bundle that never answers 2xx fails its health gate, its process stopped; retry runs it again; it cannot be promoted', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const B = base(tn.projectId);
    const out = await cli(t, 'commerce deploy', {
      project: tn.projectId,
      environment: 'preview',
      bundle: path.join(FIXTURES, 'failing-storefront'),
    });
    const r = await waitRelease(t, tn.key, tn.projectId, out.release_id, 60_000);
    expect(r).toMatchObject({ status: 'failed', error_code: 'COMMERCE_FAILED_HEALTH_GATE' });
    expect(releasesOn(t).running(out.release_id)).toBe(false);
    expect((await viaEdge(releaseHost(out.release_id))).status).toBe(503);
    // A stopped release's working directory is removed (a retry unpacks it from the blob store again).
    expect(existsSync(releasesOn(t).releaseDir(out.release_id))).toBe(false);

    const promote = await t.rest('POST', `${B}/storefront/promotions`, { key: tn.key, body: { preview_id: out.release_id } });
    expect(promote.status).toBe(409);

    const retry = await t.rest('POST', `${B}/releases/${out.release_id}/retry`, { key: tn.key });
    expect(retry.status).toBe(202);
    // It really starts again: the process runs (and answers 500) while the gate probes.
    await until('the retried process', async () => releasesOn(t).running(out.release_id));
    const second = await waitRelease(t, tn.key, tn.projectId, out.release_id, 60_000);
    expect(second).toMatchObject({ status: 'failed', attempts: 2, error_code: 'COMMERCE_FAILED_HEALTH_GATE' });
  });

  it('promotion switches the production address; analytics count the requests and 5xx the edge served; 5xx past the rule → degraded', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const B = base(tn.projectId);
    const deploy = async () => {
      const o = await cli(t, 'commerce deploy', {
        project: tn.projectId,
        environment: 'preview',
        bundle: path.join(FIXTURES, 'storefront'),
      });
      expect((await waitRelease(t, tn.key, tn.projectId, o.release_id, 60_000)).status).toBe('healthy');
      return o.release_id as string;
    };
    const a = await deploy();
    const b = await deploy();
    expect((await viaEdge(productionHost(tn.projectId))).status).toBe(404);

    const p1 = await t.rest('POST', `${B}/storefront/promotions`, { key: tn.key, body: { preview_id: a } });
    expect(p1.status).toBeLessThan(300);
    expect(p1.body.data.id).toBe(a);
    expect(releasesOn(t).productionOf(tn.projectId)).toBe(a);
    expect((await viaEdge(productionHost(tn.projectId))).status).toBe(200);

    const p2 = await t.rest('POST', `${B}/storefront/promotions`, { key: tn.key, body: { preview_id: b } });
    expect(p2.body.data.id).toBe(b);
    expect(releasesOn(t).productionOf(tn.projectId)).toBe(b);
    // The replaced release drains, then stops.
    await until('the old release to stop', async () => !releasesOn(t).running(a), 15_000);
    await until('its directory removed', async () => !existsSync(releasesOn(t).releaseDir(a)), 5_000);

    // Real requests on the production address: 1 above and 10 more answered 200, 25 answered 500
    // (the 404 before any promotion was the edge's, not the storefront's, and is not counted).
    for (let i = 0; i < 10; i++) expect((await viaEdge(productionHost(tn.projectId))).status).toBe(200);
    for (let i = 0; i < 25; i++) expect((await viaEdge(productionHost(tn.projectId), '/boom')).status).toBe(500);
    const analytics = async () => (await t.rest('GET', `${B}/storefront/analytics?range=1h`, { key: tn.key })).body.data?.totals;
    await until('analytics', async () => (await analytics())?.requests >= 36, 10_000).catch(async (e) => {
      throw new Error(`${(e as Error).message}: ${JSON.stringify(await analytics())}`);
    });
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await analytics()).toEqual({ requests: 36, errors: 25 });

    // 25 of 36 requests in the window were 5xx: the serving release turns degraded.
    const degraded = await until('degraded', async () => {
      const res = await t.rest('GET', `${B}/releases`, { key: tn.key });
      const r = res.body.data.items.find((x: { id: string }) => x.id === b);
      return r?.status === 'degraded' ? r : null;
    });
    expect(degraded.status).toBe('degraded');

    // One platform process at a time holds the hosted node, whose agent runs the releases
    // (docs/decisions/0226-hosted-node-lease.md, 0325-nodes-module.md): this one stops (as before a
    // restart, giving the node up), and another on the same database takes the node over, starts the
    // live release again and serves the production address on its own edge.
    await t.platform.stop();
    const t2 = await startTestPlatform({ COMMERCE_HEALTH_GATE_MS: '8000' }, { shareWith: t });
    // afterAll stops the second one (and drops the shared database).
    t = t2;
    const port2 = Number(new URL(t2.platform.edgeUrl!).port);
    const host2 = releasesOn(t2);
    await until('the live release on the second platform', async () => host2.productionOf(tn.projectId) === b, 30_000);
    const page = await new Promise<number>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: port2, path: '/', headers: { host: productionHost(tn.projectId) } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
        .on('error', reject);
    });
    expect(page).toBe(200);
  });
});
