import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { TestPlatform } from '../support/platform';

export const PREFIX = '/api/v1/publisher';
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

export const projectPath = (projectId: string, suffix = '') => `${PREFIX}/projects/${projectId}${suffix}`;

/** The error envelope of spec 1.5 with this code. */
export const errorBody = (code: string) => ({
  success: false,
  error: { code, message: expect.any(String), details: expect.any(Object) },
});

/** Creates a site and waits until its provisioning completed; returns the project id. */
export async function runningSite(t: TestPlatform, key: string, body: Record<string, unknown> = {}): Promise<string> {
  const res = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Site', ...body } });
  if (res.status !== 202) throw new Error(`create site: ${res.status} ${JSON.stringify(res.body)}`);
  const op = await waitForOperation(t, key, res.body.data.project.id, res.body.data.operation.id);
  if (op.status !== 'completed') throw new Error(`provision ${op.status}: ${op.error_code}`);
  return res.body.data.project.id;
}

/** Waits for the site's lifecycle lock to be free (its latest operation finished). */
export async function settled(t: TestPlatform, key: string, projectId: string, timeoutMs = 20_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.rest('GET', projectPath(projectId, '/history'), { key });
    if (res.status === 200 && res.body.data.active_operation === null) return res.body.data;
    if (Date.now() > until) throw new Error(`site ${projectId} still busy`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Fails the first `step` of the next `operationType` operation of this project only. */
export function failNext(
  t: TestPlatform,
  projectId: string,
  operationType: string,
  step: string,
  code = 'infrastructure_failure',
): void {
  t.platform.services.publisher.simulated.injectFailure({
    operationType,
    step,
    retriable: false,
    code,
    match: (op) => op.projectId === projectId,
  });
}

/** The steps a provisioning operation walks through, in order (as users see them). */
export const PROVISION_STEPS = [
  'allocate_database',
  'create_volume',
  'pull_image',
  'start_runtime',
  'configure_site',
  'health_check',
];

/** Polls a site operation through the REST bridge until it is completed or failed. */
export async function waitForOperation(
  t: TestPlatform,
  key: string,
  projectId: string,
  operationId: string,
  timeoutMs = 20_000,
): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.rest('GET', `/api/v1/publisher/projects/${projectId}/operations/${operationId}`, { key });
    const op = res.body?.data;
    if (op && (op.status === 'completed' || op.status === 'failed')) return op;
    if (Date.now() > until) throw new Error(`operation ${operationId} still ${op?.status}/${op?.step} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls `fn` every `everyMs` until it answers something truthy (a failed call counts as nothing yet). */
export async function until<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false>,
  timeoutMs = 30_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const BIN = path.join(__dirname, '..', '..', 'bin', 'platform.js');

/** Runs the built CLI (`npx platform …`) against this test platform's database. */
export async function runCli(t: TestPlatform, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, MONGODB_URI: `mongodb://127.0.0.1:27017/${t.platform.conn.name}`, LOG_LEVEL: 'silent' };
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [BIN, ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}
