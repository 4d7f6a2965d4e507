import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULT_RELEASE_MEMORY_MB } from '../../dataplane/workerd';
import { startTestPlatform, type TestPlatform, uniqueName } from '../support/platform';
import { base, cli, commerce, connectApp, connectStorefront, waitRelease } from './support';

/**
 * A release's memory limit is set per environment (`memory_mb`; docs/decisions/0273-tenant-sandbox.md,
 * docs/spec-decisions.md "Commerce"): an integer from 128 to the plan's maximum (free 512, pro 1024),
 * absent the default 512. A release keeps the limit it was created with; the sandbox's memory cgroup
 * of the running release holds exactly that limit.
 */
jest.setTimeout(240_000);

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'commerce');
const MiB = 1024 * 1024;

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform({ COMMERCE_HEALTH_GATE_MS: '8000' });
});
afterAll(async () => {
  await t?.stop();
});

/** A tenant of the given plan: account, key, project, and a store on the stand-in. */
async function tenant(plan: 'free' | 'pro') {
  const { key, accountId, account } = await t.createKey({ plan });
  const project = await t.platform.services.identity.createProject(accountId, uniqueName('shop'));
  const store = await cli(t, 'commerce stores create', { domain: `${uniqueName('store')}.example` });
  return { key, accountId, account, projectId: project._id, store };
}

/** The memory limit of a running release's sandbox, in MiB, read from its memory cgroup. */
function cgroupLimitMb(releaseId: string): number {
  const group = t.platform.dataPlane!.supervisor.sandbox!.memoryGroup(releaseId);
  return Number(readFileSync(path.join(group, 'memory.limit_in_bytes'), 'utf8')) / MiB;
}

/** Uploads a fixture bundle over HTTP and releases it over REST, as a pipeline would; waits for the gate. */
async function deploy(tn: Awaited<ReturnType<typeof tenant>>, fixture: string, environment: string) {
  const B = base(tn.projectId);
  const tar = execFileSync('tar', ['-cf', '-', '-C', path.join(FIXTURES, fixture), '.']);
  const up = await fetch(`${t.platform.bridgeUrl}${B}/artifacts`, {
    method: 'PUT',
    headers: { 'content-type': 'application/x-tar', authorization: `Bearer ${tn.key}` },
    body: tar,
  });
  expect(up.status).toBe(201);
  const artifact = ((await up.json()) as { data: { artifact: string } }).data.artifact;
  const created = await t.rest('POST', `${B}/releases`, { key: tn.key, body: { environment, artifact } });
  expect(created.status).toBe(202);
  const r = await waitRelease(t, tn.key, tn.projectId, created.body.data.id, 60_000);
  expect(r).toMatchObject({ status: 'healthy', error_code: null });
  return { release: r, artifact };
}

describe("a release's memory limit, set per environment", () => {
  it('a storefront runs with the limit its environment set, keeps it when the environment changes; absent is the default', async () => {
    const tn = await tenant('pro');
    await connectStorefront(t, tn);
    const B = base(tn.projectId);

    const put = await t.rest('PUT', `${B}/environments/preview`, { key: tn.key, body: { memory_mb: 1024 } });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ name: 'preview', memory_mb: 1024 });
    const conn = await t.rest('GET', B, { key: tn.key });
    expect(conn.body.data.environments).toEqual([expect.objectContaining({ name: 'preview', memory_mb: 1024 })]);

    const first = await deploy(tn, 'storefront', 'preview');
    expect(first.release.memory_mb).toBe(1024);
    expect(cgroupLimitMb(first.release.id)).toBe(1024);

    // The environment changes (memory_mb omitted: the default again); the running release keeps its limit.
    const reset = await t.rest('PUT', `${B}/environments/preview`, { key: tn.key, body: {} });
    expect(reset.body.data.memory_mb).toBe(DEFAULT_RELEASE_MEMORY_MB);
    expect(cgroupLimitMb(first.release.id)).toBe(1024);
    const listed = await t.rest('GET', `${B}/releases`, { key: tn.key });
    expect(listed.body.data.items.find((x: { id: string }) => x.id === first.release.id).memory_mb).toBe(1024);

    // A new release takes the environment as it is now: the default.
    const second = await deploy(tn, 'storefront', 'preview');
    expect(second.release.memory_mb).toBe(DEFAULT_RELEASE_MEMORY_MB);
    expect(cgroupLimitMb(second.release.id)).toBe(DEFAULT_RELEASE_MEMORY_MB);
  });

  it("an app on the free plan: within 128 and the plan's maximum (512), over it 422 with the maximum in details", async () => {
    const tn = await tenant('free');
    await connectApp(t, tn);
    const B = base(tn.projectId);
    const put = (memory_mb: unknown) => t.rest('PUT', `${B}/environments/production`, { key: tn.key, body: { memory_mb } });

    const over = await put(1024);
    expect(over.status).toBe(422);
    expect(over.body.error).toMatchObject({
      code: 'COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN',
      details: { field: 'memory_mb', plan: 'free', max_memory_mb: 512 },
    });
    const small = await put(100);
    expect(small.status).toBe(422);
    expect(small.body.error).toMatchObject({
      code: 'COMMERCE_INVALID_CONFIGURATION',
      details: { field: 'memory_mb', min_memory_mb: 128 },
    });
    for (const bad of [256.5, '256', true]) {
      const r = await put(bad);
      expect([bad, r.status, r.body.error.code]).toEqual([bad, 422, 'COMMERCE_INVALID_CONFIGURATION']);
    }
    // Nothing was stored by the refusals: the environment does not exist yet.
    expect((await t.rest('GET', B, { key: tn.key })).body.data.environments).toEqual([]);

    // The same rule over GraphQL.
    const gql = await t.gql(
      'mutation($p: ID!) { commercePutEnvironment(projectId: $p, environment: "production", input: { memoryMb: 513 }) { memoryMb } }',
      { p: tn.projectId },
      tn.key,
    );
    expect(gql.errors?.[0]?.extensions?.code).toBe('COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN');

    const ok = await put(256);
    expect(ok.status).toBe(200);
    expect(ok.body.data.memory_mb).toBe(256);
    const { release, artifact } = await deploy(tn, 'app', 'production');
    expect(release.memory_mb).toBe(256);
    expect(cgroupLimitMb(release.id)).toBe(256);

    // A plan lowered after the environment was set: a new release over the plan's maximum is refused.
    const connection = await commerce(t).connections.get(tn.projectId);
    await t.rest('PUT', `${B}/environments/production`, { key: tn.key, body: { memory_mb: 512 } });
    await expect(
      commerce(t).releases.deployArtifact(connection, 'production', artifact, { plan: 'free', maxMb: 384 }),
    ).rejects.toMatchObject({
      code: 'COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN',
      status: 422,
      details: { environment: 'production', max_memory_mb: 384 },
    });
  });
});
