import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findStandIns, type StandInsRecord } from '../../cli/stand-ins';
import { projectRoot } from '../../core/paths';
import { assertBuilt, type ChildPlatform, childPlatformScope } from '../support/child-platform';

/**
 * Two `platform start` in one checkout (other ports, same DATA_DIR): each keeps its own stand-ins
 * record, stopping one leaves the other's, and the CLI finds the instance it addresses
 * (decision 0102). DATA_DIR is absolute here, as a user may set it: the records go there.
 */
jest.setTimeout(240_000);

const first = childPlatformScope();
const second = childPlatformScope();
let dataDir: string;
let a: ChildPlatform;
let b: ChildPlatform;

const portOf = (url: string) => new URL(url).port;
const sigterm = (c: ChildPlatform) =>
  new Promise<number | null>((resolve) => {
    if (c.proc.exitCode !== null) return resolve(c.proc.exitCode);
    c.proc.once('exit', (code) => resolve(code));
    c.proc.kill('SIGTERM');
  });

beforeAll(async () => {
  assertBuilt();
  dataDir = await mkdtemp(path.join(tmpdir(), 'platform-two-instances-'));
  a = await first.start({ env: { DATA_DIR: dataDir } });
  b = await second.start({ env: { DATA_DIR: dataDir } });
});
afterAll(async () => {
  await first.cleanup();
  await second.cleanup();
  await rm(dataDir, { recursive: true, force: true });
});

it('keeps one stand-ins record per instance under an absolute DATA_DIR; stopping one leaves the other', async () => {
  const dir = path.join(dataDir, 'stand-ins');
  const read = async (c: ChildPlatform) =>
    JSON.parse(await readFile(path.join(dir, `${portOf(c.bridgeUrl)}.json`), 'utf8')) as StandInsRecord;
  const ra = await read(a);
  const rb = await read(b);
  expect(ra).toMatchObject({ pid: a.proc.pid, bridgeUrl: a.bridgeUrl });
  expect(rb).toMatchObject({ pid: b.proc.pid, bridgeUrl: b.bridgeUrl });
  expect(Object.keys(ra.standIns).length).toBeGreaterThan(0);
  // Each instance runs its own stand-ins, on its own addresses.
  const shared = Object.keys(ra.standIns).filter((env) => ra.standIns[env] === rb.standIns[env]);
  expect(shared).toEqual([]);

  // The process records of `platform status` are under the absolute DATA_DIR too, not under the
  // project root joined with it.
  expect((await readdir(path.join(dataDir, 'processes'))).sort()).toEqual([`${a.proc.pid}.json`, `${b.proc.pid}.json`].sort());
  expect(existsSync(path.join(projectRoot(), dataDir))).toBe(false);

  // The CLI finds the instance it addresses by --api-url; with several running and none on the
  // default port, it finds none and says why.
  expect((await findStandIns(dir, { apiUrl: a.bridgeUrl, bridgePort: 8080 })).record?.standIns).toEqual(ra.standIns);
  expect((await findStandIns(dir, { apiUrl: b.bridgeUrl, bridgePort: 8080 })).record?.standIns).toEqual(rb.standIns);
  expect((await findStandIns(dir, { bridgePort: Number(portOf(b.bridgeUrl)) })).record?.pid).toBe(b.proc.pid);
  const ambiguous = await findStandIns(dir, { bridgePort: 1 });
  expect(ambiguous.record).toBeNull();
  expect(ambiguous.note).toContain('pass --api-url');

  // Stopping the second (cleanly) removes its record only.
  expect(await sigterm(b)).toBe(0);
  expect(existsSync(path.join(dir, `${portOf(b.bridgeUrl)}.json`))).toBe(false);
  expect(await read(a)).toEqual(ra);
  // With one instance left, a CLI call on the default port finds it.
  expect((await findStandIns(dir, { bridgePort: 1 })).record?.pid).toBe(a.proc.pid);
  expect((await findStandIns(dir, { apiUrl: b.bridgeUrl, bridgePort: 1 })).record).toBeNull();

  // A killed instance's record is left behind but not used.
  await a.kill();
  expect((await findStandIns(dir, { apiUrl: a.bridgeUrl, bridgePort: 1 })).record).toBeNull();
});
