/**
 * MongoDB commands per REST request on the hot reads (decision 0015): every round trip to the
 * MongoDB-wire server costs more than the gateway, so the count is pinned here and a change that
 * adds one fails. Counted with the driver's command monitoring on the platform's own connection.
 */
import { request } from 'node:http';
import type { mongo } from 'mongoose';
import { loadConfig } from '../../core/config';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { projectPath, runningSite } from '../publisher/support';

let t: TestPlatform;
/** A second platform on the same database with no workers: no background polling between requests. */
let reader: TestPlatform;
let seen: mongo.CommandStartedEvent[] | null = null;
const previousUri = process.env.MONGODB_URI;

beforeAll(async () => {
  // Command monitoring is a connection-string option: every pooled connection then emits commandStarted.
  t = await startTestPlatform();
  const uri = loadConfig(process.env).mongodbUri;
  process.env.MONGODB_URI = `${uri}${uri.includes('?') ? '&' : '?'}monitorCommands=true`;
  reader = await startTestPlatform({}, { shareWith: t, workers: false, standIns: false });
  reader.platform.conn.getClient().on('commandStarted', (e) => seen?.push(e));
});
afterAll(async () => {
  await reader.platform.stop();
  await t.stop();
  if (previousUri === undefined) delete process.env.MONGODB_URI;
  else process.env.MONGODB_URI = previousUri;
});

/** The MongoDB commands `fn` sent, as `command collection` strings, after background work is quiet. */
async function commandsOf(fn: () => Promise<unknown>): Promise<string[]> {
  seen = [];
  await fn();
  const got = seen;
  seen = null;
  return got.map((e) => `${e.commandName} ${String((e.command as Record<string, unknown>)[e.commandName])}`);
}

describe('MongoDB commands per REST read', () => {
  let key: string;
  let projectId: string;

  beforeAll(async () => {
    ({ key } = await t.createKey());
    projectId = await runningSite(t, key);
  });

  it('a platform without workers sends nothing while idle, so the counts below are the routes alone', async () => {
    expect(await commandsOf(() => new Promise((r) => setTimeout(r, 500)))).toEqual([]);
  });

  it('GET /projects/{id}/metadata: six commands cold, then the site and its newsletter provider only', async () => {
    const path = projectPath(projectId, '/metadata');
    // Cold: the key and its account, the site, its finished lock holder, its project, its provider.
    const cold = await commandsOf(async () => expect((await reader.rest('GET', path, { key })).status).toBe(200));
    expect(cold.sort()).toEqual([
      'find accounts',
      'find api_keys',
      'find operations',
      'find projects',
      'find publisher_newsletter_providers',
      'find publisher_sites',
    ]);
    // Warm: the principal (5 s), the finished operation and the project (both immutable) are remembered.
    const warm = await commandsOf(async () => expect((await reader.rest('GET', path, { key })).status).toBe(200));
    expect(warm.sort()).toEqual(['find publisher_newsletter_providers', 'find publisher_sites']);
  });

  it('concurrent requests of one unknown-to-the-cache key share one principal lookup', async () => {
    const other = await t.createKey();
    const path = projectPath(projectId, '/metadata');
    const cmds = await commandsOf(() =>
      Promise.all(Array.from({ length: 16 }, () => reader.rest('GET', path, { key: other.key }))).then((rs) =>
        rs.forEach((r) => expect(r.status).toBe(404)),
      ),
    );
    expect(cmds.filter((c) => c === 'find api_keys')).toHaveLength(1);
    expect(cmds.filter((c) => c === 'find accounts')).toHaveLength(1);
  });

  it('GET /projects/{id}/recovery-points', async () => {
    const path = projectPath(projectId, '/recovery-points');
    expect((await reader.rest('GET', path, { key })).status).toBe(200);
    const cmds = await commandsOf(async () => expect((await reader.rest('GET', path, { key })).status).toBe(200));
    expect(cmds.sort()).toEqual(['find publisher_recovery_points', 'find publisher_sites']);
  });
});

describe('MongoDB commands per REST write', () => {
  it('POST /sites (hosted): the plan slot, a resumed-create check and three inserts', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    expect((await reader.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'warm' } })).status).toBe(202);
    const cmds = await commandsOf(async () =>
      expect((await reader.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Counted' } })).status).toBe(202),
    );
    // The principal is cached. Without an Idempotency-Key the operation id is drawn for this
    // request, so the archive is not asked whether it ran before (`idIsNew` in the engine).
    expect(cmds).toEqual([
      'findAndModify publisher_site_quota',
      'find publisher_sites',
      'insert projects',
      'insert publisher_sites',
      'insert operations',
    ]);
  });
});

describe('MongoDB commands per upload', () => {
  const upload = async (key: string, name: string) => {
    const form = new FormData();
    form.set('file', new Blob([Buffer.from(`hello ${name}\n`)]), `${name}.txt`);
    const res = await fetch(`${reader.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(res.status).toBe(201);
  };
  // The principal's lookup (cached 5 s; a slow machine can outlast that) is not the upload's.
  const notKey = (c: string) => c !== 'find api_keys' && c !== 'find accounts';

  it('POST /assets/upload on a warm account: one quota $inc to hold, no second policy read, the bucket read while streaming', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    await upload(key, 'warm');
    const cmds = (await commandsOf(() => upload(key, 'counted'))).filter(notKey);
    // Hold: the policy, one conditional $inc (the counter exists: no upsert first). Staging: the
    // default bucket (looked up while the file streams). Settle (the unused part of the hold back)
    // beside the record; the record and its ready state with the event. The policy the hold read
    // serves the content check (decision 0240). The file's first bytes are read while the hold is in
    // flight (decision 0255), so the bucket's lookup may come between the hold's two commands.
    expect(cmds[0]).toBe('find asset_accounts');
    expect(cmds.indexOf('update asset_accounts')).toBeLessThan(cmds.indexOf('insert assets'));
    expect(cmds.at(-1)).toBe('update assets');
    expect([...cmds].sort()).toEqual(
      [
        'find asset_accounts',
        'find asset_buckets',
        'insert assets',
        'update asset_accounts',
        'update asset_accounts',
        'update assets',
      ].sort(),
    );
  });

  it('after the last byte of a file only the record, its ready state and the settle beside them wait (decision 0240)', async () => {
    const { key } = await t.createKey({ plan: 'pro' });
    await upload(key, 'warm');
    const boundary = 'c0untb0undary';
    const head = Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="slow.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
    );
    const file = Buffer.alloc(256 * 1024, 7);
    const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
    let atLastByte = 0;
    const cmds = await commandsOf(async () => {
      const req = request(new URL('/api/v1/assets/upload', reader.bridgeUrl), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(head.length + file.length + tail.length),
        },
      });
      const answer = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
      req.write(head);
      req.write(file.subarray(0, 1024));
      // The hold is taken and the file has begun; everything the upload needs before its last byte is done.
      const until = Date.now() + 10_000;
      while (!seen!.some((e) => e.commandName === 'update') && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 500));
      atLastByte = seen!.length;
      req.end(Buffer.concat([file.subarray(1024), tail]));
      expect(await answer).toBe(201);
    });
    const after = cmds.slice(atLastByte).filter(notKey);
    expect(after.sort()).toEqual(['insert assets', 'update asset_accounts', 'update assets']);
  });
});
