import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');
let t: TestPlatform;

/** Runs the built CLI against this test platform's database. */
async function platform(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, MONGODB_URI: `mongodb://127.0.0.1:27017/${t.platform.conn.name}`, LOG_LEVEL: 'silent' };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

describe('the platform CLI', () => {
  it('`keys create --json` prints one JSON object whose key works against the API', async () => {
    const account = uniqueName('cli');
    const res = await platform([
      'keys',
      'create',
      '--account',
      account,
      '--plan',
      'pro',
      '--role',
      'member',
      '--scopes',
      'publisher:read,identity:read',
      '--json',
    ]);
    expect(res.code).toBe(0);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const created = JSON.parse(lines[0]);
    expect(created).toMatchObject({
      key: expect.stringMatching(/^pk_[0-9a-f]{12}_/),
      account,
      plan: 'pro',
      role: 'member',
      scopes: ['publisher:read', 'identity:read'],
      mode: 'live',
    });
    const api = await t.rest('GET', '/api/v1/publisher/runtime-options', { key: created.key });
    expect(api.status).toBe(200);
    const stored = await t.platform.conn.collection('api_keys').findOne({ prefix: created.prefix });
    expect(JSON.stringify(stored)).not.toContain(created.key);
  });

  it('`projects create` and `nodes register` print JSON records', async () => {
    const account = uniqueName('cli');
    const project = await platform(['projects', 'create', '--account', account, '--name', 'From CLI', '--json']);
    expect(JSON.parse(project.stdout)).toMatchObject({ id: expect.any(String), name: 'From CLI' });
    const node = await platform([
      'nodes',
      'register',
      '--account',
      account,
      '--name',
      'edge-1',
      '--tags',
      'region:eu,tier:gold',
      '--json',
    ]);
    expect(JSON.parse(node.stdout)).toMatchObject({ id: expect.any(String), tags: ['region:eu', 'tier:gold'] });
  });

  it('answers a usage error with one clear sentence and exit code 2 (docs/contracts.md)', async () => {
    const res = await platform(['keys', 'create', '--json']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^platform: keys create needs --account SLUG\n/);
    expect(res.stderr).not.toMatch(/\n\s+at /);
    const bad = await platform(['keys', 'create', '--account', 'x', '--role', 'admin']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/role must be one of owner, member, read_only/);
  });

  it('`compose --check` passes on the committed schema', async () => {
    const res = await platform(['compose', '--check']);
    expect(res.code).toBe(0);
  });
});
