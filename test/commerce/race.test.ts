import { startTestPlatform, type TestPlatform } from '../support/platform';
import { base, connectStorefront, tenant, waitOperation } from './support';

/** A platform whose operations wait 1.5 s before starting work, so a change can land in between. */
// A busy shared machine can stretch the operations here well past jest's default.
jest.setTimeout(180_000);

let slow: TestPlatform;
let off: TestPlatform;
beforeAll(async () => {
  [slow, off] = await Promise.all([
    startTestPlatform({ SIMULATED_STEP_DELAY_MS: '1500' }),
    startTestPlatform({ COMMERCE_ENABLED: 'false' }),
  ]);
});
afterAll(async () => {
  await Promise.all([slow?.stop(), off?.stop()]);
});

describe('verification is bound to the environment it was requested for (spec 3.2)', () => {
  it('credentials changed between the request and execution → the verification fails COMMERCE_CONFIG_MISMATCH', async () => {
    const tn = await tenant(slow);
    await connectStorefront(slow, tn);
    const P = `${base(tn.projectId)}/environments/production`;
    await slow.rest('PUT', P, { key: tn.key, body: { public_storefront_token: tn.store.storefront_token } });
    const verify = await slow.rest('POST', `${P}/verify`, { key: tn.key });
    expect(verify.status).toBe(202);
    expect(verify.body.data.status).toBe('queued');
    // The credentials change while the verification waits in the queue.
    const changed = await slow.rest('PUT', P, { key: tn.key, body: { public_storefront_token: 'cst_rotated_token_value' } });
    expect(changed.body.data.verification.state).toBe('pending');
    const op = await waitOperation(slow, tn.key, tn.projectId, verify.body.data.id);
    expect(op).toMatchObject({ status: 'failed', error_code: 'COMMERCE_CONFIG_MISMATCH', error_message: expect.any(String) });
    const conn = await slow.rest('GET', base(tn.projectId), { key: tn.key });
    // The failed check never marks the new credentials verified (nor invalid): they await their own verification.
    expect(conn.body.data.environments[0].verification.state).toBe('pending');
    expect(conn.body.data.state).toBe('pending');
  });
});

describe('feature switch', () => {
  it('commerce switched off → 404 COMMERCE_DISABLED on every route, with the commerce envelope', async () => {
    const { key, accountId } = await off.createKey();
    const project = await off.platform.services.identity.createProject(accountId, 'shop');
    for (const [method, path] of [
      ['GET', ''],
      ['POST', '/environments/production/verify'],
      ['GET', '/storefront/analytics?range=1h'],
      ['GET', '/releases'],
    ] as const) {
      const res = await off.rest(method, `${base(project._id)}${path}`, { key });
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ success: false, status: 'error', status_code: 404, error: { code: 'COMMERCE_DISABLED' } });
    }
  });
});
