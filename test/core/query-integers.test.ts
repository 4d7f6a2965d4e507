import { randomUUID } from 'node:crypto';
import { bucketPath, knownBucket } from '../objstore/support';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * Query integers are strict on every area (decision 0141, `core/query-int.ts`): only digits within
 * the documented bounds; `0x10`, ` 5`, `1e1` and an empty value are 400 (commerce: 422) with the field list in the
 * area's envelope, where `z.coerce.number()` used to read them as numbers.
 */
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(() => t.stop());

const LOOSE = ['0x10', '%205', '1e1', ''];

describe('query integers', () => {
  it('assets list and event-subscription history refuse loose integers (standard envelope) and take ?limit=5', async () => {
    const { key, accountId } = await t.createKey();
    const bucketId = await knownBucket(t, accountId);
    const sub = await t.rest('POST', bucketPath(bucketId, '/event-subscriptions'), { key, body: {} });
    expect(sub.status).toBe(201);
    const routes = ['/api/v1/assets', bucketPath(bucketId, `/event-subscriptions/${sub.body.data.id}/history`)];
    for (const path of routes) {
      for (const v of LOOSE) {
        const res = await t.rest('GET', `${path}?limit=${v}`, { key });
        expect({ path, v, status: res.status }).toEqual({ path, v, status: 400 });
        expect(res.body.success).toBe(false);
        expect(res.body.error.code).toBe('invalid_request');
        expect(res.body.error.details.fields).toEqual([expect.objectContaining({ field: 'limit' })]);
      }
      const ok = await t.rest('GET', `${path}?limit=5`, { key });
      expect({ path, status: ok.status }).toEqual({ path, status: 200 });
    }
  });

  it('a commerce list refuses them in the commerce envelope (its 400 is 422, spec 7.2); ?limit=5 passes validation', async () => {
    const { key } = await t.createKey();
    const path = `/api/v1/projects/${randomUUID()}/commerce/releases`;
    for (const v of LOOSE) {
      const res = await t.rest('GET', `${path}?limit=${v}`, { key });
      expect({ v, status: res.status }).toEqual({ v, status: 422 });
      expect(res.body).toMatchObject({ status: 'error', status_code: 422 });
      expect(res.body.error.code).toBe('COMMERCE_INVALID_CONFIGURATION');
      expect(res.body.error.details.fields).toEqual([expect.objectContaining({ field: 'limit' })]);
    }
    const ok = await t.rest('GET', `${path}?limit=5`, { key });
    expect([400, 422]).not.toContain(ok.status);
  });
});
