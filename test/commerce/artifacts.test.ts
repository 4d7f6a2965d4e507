import { execFileSync } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, cpSync, mkdtempSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { ARTIFACT_RETENTION_MS, MAX_ARTIFACT_BYTES } from '../../subgraphs/commerce/artifacts';
import { startTestPlatform, type TestPlatform, uniqueName } from '../support/platform';
import { base, cli, commerce, connectStorefront, tenant } from './support';

/**
 * Release artifacts belong to the accounts that uploaded them (docs/decisions/0271-artifact-ownership.md):
 * a release only from an artifact the account uploaded itself (another account's answers as an
 * unknown one), the same upload answer for new and stored bytes, a per-account quota, and the body
 * streamed to disk rather than held in memory.
 */
jest.setTimeout(240_000);

const FIXTURES = path.join(__dirname, '..', 'fixtures', 'commerce');
const MiB = 1024 * 1024;

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform({
    COMMERCE_HEALTH_GATE_MS: '8000',
    // A free account holds at most 2 artifacts and 64 KiB here (the defaults are far larger).
    COMMERCE_ARTIFACT_QUOTA_COUNT_FREE: '2',
    COMMERCE_ARTIFACT_QUOTA_BYTES_FREE: String(64 * 1024),
  });
});
afterAll(async () => {
  await t?.stop();
});

/** A storefront bundle of its own (the blob store outlives test runs): the fixture, a build id, optional padding. */
function bundle(padBytes = 0): Buffer {
  const dir = mkdtempSync(path.join(tmpdir(), 'artifact-test-'));
  try {
    cpSync(path.join(FIXTURES, 'storefront'), dir, { recursive: true });
    writeFileSync(path.join(dir, 'build-id.txt'), randomUUID());
    if (padBytes > 0) writeFileSync(path.join(dir, 'pad.bin'), randomBytes(padBytes));
    return execFileSync('tar', ['-cf', '-', '-C', dir, '.']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function upload(projectId: string, key: string, body: Buffer) {
  const res = await fetch(`${t.bridgeUrl}${base(projectId)}/artifacts`, {
    method: 'PUT',
    headers: { 'content-type': 'application/x-tar', authorization: `Bearer ${key}` },
    body,
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function freeTenant() {
  const { key, accountId } = await t.createKey({ plan: 'free' });
  const project = await t.platform.services.identity.createProject(accountId, uniqueName('shop'));
  return { key, accountId, projectId: project._id };
}

describe('commerce artifacts belong to the accounts that uploaded them', () => {
  it("a release from another account's artifact answers as an unknown one; the upload answers the same for new and stored bytes", async () => {
    const a = await tenant(t);
    const b = await tenant(t);
    await connectStorefront(t, a);
    await connectStorefront(t, b);

    const x = bundle();
    const first = await upload(a.projectId, a.key, x);
    expect(first.status).toBe(201);
    expect(first.body.data).toEqual({ artifact: sha256(x), bytes: x.length, stored: true });

    // B never uploaded X: the same answer as a hash nobody uploaded (404, same body).
    const release = (tn: typeof a, artifact: string) =>
      t.rest('POST', `${base(tn.projectId)}/releases`, { key: tn.key, body: { environment: 'preview', artifact } });
    const foreign = await release(b, sha256(x));
    const unknown = await release(b, randomBytes(32).toString('hex'));
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(unknown.body);
    expect(foreign.body.error.code).toBe('COMMERCE_NOT_FOUND');
    // Nor over GraphQL.
    const gql = await t.gql(
      'mutation($p: ID!, $a: String!) { commerceCreateRelease(projectId: $p, environment: "preview", artifact: $a) { id } }',
      { p: b.projectId, a: sha256(x) },
      b.key,
    );
    expect(gql.errors?.[0]?.extensions?.code).toBe('COMMERCE_NOT_FOUND');

    // The same answer whoever stored the bytes first, and for the same account again: no oracle.
    const byB = await upload(b.projectId, b.key, x);
    const again = await upload(a.projectId, a.key, x);
    expect(byB).toEqual(first);
    expect(again).toEqual(first);
    const y = bundle();
    const fresh = await upload(a.projectId, a.key, y);
    expect(fresh).toEqual({ status: 201, body: { ...first.body, data: { artifact: sha256(y), bytes: y.length, stored: true } } });

    // Once B uploaded X itself, B may release it; A's hold is its own.
    expect((await release(b, sha256(x))).status).toBe(202);
    expect((await release(a, sha256(x))).status).toBe(202);
  });

  it('the retention sweep works per owner: an old hold no release names ends; the bytes go with the last holder', async () => {
    const a = await tenant(t);
    const b = await tenant(t);
    const x = bundle();
    const sha = sha256(x);
    expect((await upload(a.projectId, a.key, x)).status).toBe(201);
    expect((await upload(b.projectId, b.key, x)).status).toBe(201);
    const { Artifact, ArtifactOwner } = commerce(t).models;
    const old = new Date(Date.now() - ARTIFACT_RETENTION_MS - 60_000);

    // B's hold is old (A's is fresh): B's ends, the bytes stay for A.
    await ArtifactOwner.updateOne({ _id: `${b.accountId}:${sha}` }, { $set: { usedAt: old } });
    await Artifact.updateOne({ _id: sha }, { $set: { usedAt: old } });
    expect(await commerce(t).artifacts.sweep()).not.toContain(sha);
    expect(await ArtifactOwner.exists({ _id: `${b.accountId}:${sha}` })).toBeFalsy();
    expect(await ArtifactOwner.exists({ _id: `${a.accountId}:${sha}` })).toBeTruthy();
    expect(await commerce(t).artifacts.has(sha)).toBe(true);
    expect(await commerce(t).artifacts.take(b.accountId, sha)).toBe(false);

    // A's hold goes old too: nobody holds the bytes and no release names them, so they go.
    await ArtifactOwner.updateOne({ _id: `${a.accountId}:${sha}` }, { $set: { usedAt: old } });
    await Artifact.updateOne({ _id: sha }, { $set: { usedAt: old } });
    expect(await commerce(t).artifacts.sweep()).toContain(sha);
    expect(await commerce(t).artifacts.has(sha)).toBe(false);
  });

  it("refuses an upload past the account's quota (413 COMMERCE_ARTIFACT_QUOTA_EXCEEDED), storing nothing; a re-upload is free; the sweep gives room back", async () => {
    const f = await freeTenant();
    // Bytes: 100 KiB is over the 64 KiB quota.
    const big = bundle(100 * 1024);
    const overBytes = await upload(f.projectId, f.key, big);
    expect(overBytes.status).toBe(413);
    expect(overBytes.body.error).toMatchObject({
      code: 'COMMERCE_ARTIFACT_QUOTA_EXCEEDED',
      details: { quota_bytes: 64 * 1024, quota_artifacts: 2, used_artifacts: 0, artifact_bytes: big.length },
    });
    expect(await commerce(t).artifacts.has(sha256(big))).toBe(false);

    // Count: 2 artifacts fit, the third does not.
    const [one, two, three] = [bundle(), bundle(), bundle()];
    expect((await upload(f.projectId, f.key, one)).status).toBe(201);
    expect((await upload(f.projectId, f.key, two)).status).toBe(201);
    const overCount = await upload(f.projectId, f.key, three);
    expect(overCount.status).toBe(413);
    expect(overCount.body.error.code).toBe('COMMERCE_ARTIFACT_QUOTA_EXCEEDED');
    expect(await commerce(t).artifacts.has(sha256(three))).toBe(false);
    expect(await commerce(t).artifacts.usage(f.accountId)).toEqual({ count: 2, bytes: one.length + two.length });
    // Uploading what the account already holds costs nothing.
    expect((await upload(f.projectId, f.key, one)).status).toBe(201);

    // Another account's holds do not count here (a pro account's upload of `three` changes nothing).
    const p = await tenant(t);
    expect((await upload(p.projectId, p.key, three)).status).toBe(201);
    expect((await upload(f.projectId, f.key, three)).status).toBe(413);

    // The sweep ends the old hold of `one` (no release names it): room for `three`.
    const old = new Date(Date.now() - ARTIFACT_RETENTION_MS - 60_000);
    await commerce(t).models.ArtifactOwner.updateOne({ _id: `${f.accountId}:${sha256(one)}` }, { $set: { usedAt: old } });
    await commerce(t).artifacts.sweep();
    expect((await upload(f.projectId, f.key, three)).status).toBe(201);
  });

  it('the operator CLI packs a bundle held by the project account', async () => {
    const a = await tenant(t);
    await connectStorefront(t, a);
    const out = await cli(t, 'commerce deploy', {
      project: a.projectId,
      environment: 'preview',
      bundle: path.join(FIXTURES, 'storefront'),
    });
    expect(await commerce(t).models.ArtifactOwner.exists({ _id: `${a.accountId}:${out.artifact}` })).toBeTruthy();
  });

  it('streams the body to disk while it arrives (the heap does not hold it) and keeps the 64 MiB limit', async () => {
    const tn = await tenant(t);
    const url = new URL(`${t.bridgeUrl}${base(tn.projectId)}/artifacts`);
    const request = (headers: Record<string, string | number> = {}) => {
      const req = http.request({
        host: url.hostname,
        port: url.port,
        method: 'PUT',
        path: url.pathname,
        headers: { authorization: `Bearer ${tn.key}`, 'content-type': 'application/x-tar', ...headers },
      });
      req.on('error', () => undefined);
      req.flushHeaders();
      const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
        req.on('response', (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        });
        req.on('error', reject);
      });
      return { req, answer };
    };
    const send = (req: http.ClientRequest, file: string, range: { start?: number; end?: number }) =>
      new Promise<void>((resolve, reject) => {
        const s = createReadStream(file, range);
        s.on('end', resolve).on('error', reject);
        s.pipe(req, { end: false });
      });

    // A 40 MiB archive (a sparse file of zeros and a build id), sent in two halves with a pause between.
    const dir = mkdtempSync(path.join(tmpdir(), 'artifact-large-'));
    const src = path.join(dir, 'src');
    cpSync(path.join(FIXTURES, 'storefront'), src, { recursive: true });
    writeFileSync(path.join(src, 'build-id.txt'), randomUUID());
    writeFileSync(path.join(src, 'zeros.bin'), '');
    truncateSync(path.join(src, 'zeros.bin'), 40 * MiB);
    const tar = path.join(dir, 'bundle.tar');
    execFileSync('tar', ['-cf', tar, '-C', src, '.']);
    const size = statSync(tar).size;
    const half = 32 * MiB;

    const v8gc = (() => {
      v8.setFlagsFromString('--expose-gc');
      return vm.runInNewContext('gc') as () => void;
    })();
    const heldBytes = () => {
      v8gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    try {
      const before = heldBytes();
      const { req, answer } = request();
      await send(req, tar, { end: half - 1 });
      // While the client pauses, the first half is on disk in the upload folder, not in memory.
      const uploads = commerce(t).artifacts.uploadsDir as string | undefined;
      const onDisk = () =>
        uploads === undefined
          ? 0
          : readdirSync(uploads).reduce(
              (n, name) => n + (statSync(path.join(uploads, name), { throwIfNoEntry: false })?.size ?? 0),
              0,
            );
      const until = Date.now() + 15_000;
      while (onDisk() < half - 4 * MiB && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      const grown = heldBytes() - before;
      console.log(`heap + array buffers grew by ${(grown / MiB).toFixed(1)} MiB with ${half / MiB} MiB sent`);
      expect(grown).toBeLessThan(16 * MiB);
      expect(onDisk()).toBeGreaterThanOrEqual(half - 4 * MiB);
      await send(req, tar, { start: half });
      req.end();
      const res = await answer;
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ bytes: size, stored: true });
      // The upload file is gone once the artifact is stored.
      expect(onDisk()).toBeLessThan(MiB);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }

    // A declared length over 64 MiB is refused before the body is read.
    const declared = request({ 'content-length': MAX_ARTIFACT_BYTES + 1 });
    const refused = await declared.answer;
    declared.req.destroy();
    expect(refused.status).toBe(413);
    expect(refused.body.error.code).toBe('COMMERCE_PAYLOAD_TOO_LARGE');

    // A chunked body that runs past 64 MiB is refused at the limit.
    const chunked = request();
    const zeros = Buffer.alloc(MiB);
    let answered = false;
    void chunked.answer.then(() => (answered = true)).catch(() => undefined);
    for (let sent = 0; sent <= MAX_ARTIFACT_BYTES && !answered && !chunked.req.destroyed; sent += MiB) {
      if (chunked.req.write(zeros)) continue;
      await new Promise<void>((resolve) => {
        const done = () => {
          chunked.req.off('drain', done).off('close', done);
          resolve();
        };
        chunked.req.on('drain', done).on('close', done);
      });
    }
    chunked.req.end();
    const past = await chunked.answer;
    expect(past.status).toBe(413);
    expect(past.body.error.code).toBe('COMMERCE_PAYLOAD_TOO_LARGE');
  });
});
