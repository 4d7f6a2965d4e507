import { InProcessDataSource } from '../../router/data-sources';
import { singleFetchPath } from '../../router/single-fetch';
import { waitForOperation } from '../publisher/support';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The router's single-fetch path (decision 0313) answers exactly what the gateway's shaping
 * answers: every request here is sent with the path on and off, and the raw bodies compared.
 */
let t: TestPlatform;
let key: string;
let projectId: string;

beforeAll(async () => {
  t = await startTestPlatform();
  ({ key } = await t.createKey());
  const created = await t.rest('POST', '/api/v1/publisher/sites', { key, body: { name: 'Single Fetch' } });
  expect(created.status).toBe(202);
  projectId = created.body.data.project.id;
  await waitForOperation(t, key, projectId, created.body.data.operation.id);
  const point = await t.rest('POST', `/api/v1/publisher/projects/${projectId}/recovery-points`, { key, body: { reason: 'x' } });
  expect(point.status).toBe(202);
  await waitForOperation(t, key, projectId, point.body.data.operation.id);
});
afterAll(async () => {
  singleFetchPath.enabled = true;
  await t.stop();
});

async function raw(url: string, init: RequestInit): Promise<string> {
  const res = await fetch(url, init);
  return `${res.status} ${await res.text()}`;
}

/** The body with the path on (after a first request, which plans) and off; `direct` when it was taken. */
async function bothWays(send: () => Promise<string>): Promise<{ on: string; off: string; direct: boolean }> {
  singleFetchPath.enabled = true;
  await send();
  const before = singleFetchPath.direct;
  const on = await send();
  const direct = singleFetchPath.direct > before;
  singleFetchPath.enabled = false;
  try {
    return { on, off: await send(), direct };
  } finally {
    singleFetchPath.enabled = true;
  }
}

const gql =
  (query: string, variables: Record<string, unknown> = {}, withKey = true) =>
  () =>
    raw(t.routerUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(withKey ? { authorization: `Bearer ${key}` } : {}) },
      body: JSON.stringify({ query, variables }),
    });

describe('the single-fetch path', () => {
  it.each([
    ['metadata', '/metadata'],
    ['the recovery-points list', '/recovery-points'],
    ['an unknown project (404)', '/../00000000-0000-4000-8000-000000000000/metadata'],
  ])('answers the REST read of %s byte for byte as the gateway does', async (_name, suffix) => {
    const url = new URL(`${t.bridgeUrl}/api/v1/publisher/projects/${projectId}${suffix}`).href;
    const { on, off } = await bothWays(() => raw(url, { headers: { authorization: `Bearer ${key}` } }));
    expect(on).toBe(off);
  });

  it('takes the path for the bridge reads, and leaves the gateway to shape what it must', async () => {
    const read = () =>
      raw(`${t.bridgeUrl}/api/v1/publisher/projects/${projectId}/recovery-points`, {
        headers: { authorization: `Bearer ${key}` },
      });
    expect((await bothWays(read)).direct).toBe(true);
    // A fragment on the type selected is read in place; two subgraphs, __typename, a directive: shaped by the gateway.
    const id = { id: projectId };
    expect((await bothWays(gql('query($id: ID!) { project(id: $id) { ... on Project { id } } }', id))).direct).toBe(true);
    expect((await bothWays(gql('query($id: ID!) { project(id: $id) { id name site { status } } }', id))).direct).toBe(false);
    expect((await bothWays(gql('query($id: ID!) { project(id: $id) { __typename id } }', id))).direct).toBe(false);
    expect((await bothWays(gql('query($id: ID!) { project(id: $id) { id @include(if: true) } }', id))).direct).toBe(false);
  });

  it.each([
    ['one subgraph', 'query($id: ID!) { project(id: $id) { id name createdAt } }', {}],
    ['aliases', 'query($id: ID!) { a: project(id: $id) { n: name } b: project(id: $id) { id } }', {}],
    ['two subgraphs', 'query($id: ID!) { project(id: $id) { id name site { status runtimeVersion } } }', {}],
    ['a fragment', 'query($id: ID!) { project(id: $id) { ...P } } fragment P on Project { id name }', {}],
    ['__typename', 'query($id: ID!) { __typename project(id: $id) { __typename id } }', {}],
    ['an unknown id (errors)', 'query($id: ID!) { project(id: $id) { name } }', { id: '00000000-0000-4000-8000-000000000000' }],
    ['a variable of the wrong type', 'query($id: ID!) { project(id: $id) { name } }', { id: { no: 1 } }],
    ['a missing variable', 'query($id: ID!) { project(id: $id) { name } }', { id: null }],
  ])('answers a GraphQL query with %s byte for byte as the gateway does', async (_name, query, variables) => {
    const { on, off } = await bothWays(gql(query, { id: projectId, ...variables }));
    expect(on).toBe(off);
  });

  it('answers a refusal (no key) as the gateway does', async () => {
    const { on, off } = await bothWays(gql('{ runtimeOptions { version } }', {}, false));
    expect(on).toContain('unauthenticated');
    expect(on).toBe(off);
  });

  it('fetches once when the answer has errors: the gateway shapes the answer already fetched', async () => {
    const query = gql('query($id: ID!) { project(id: $id) { name } }', { id: '00000000-0000-4000-8000-000000000000' });
    await query();
    const process = jest.spyOn(InProcessDataSource.prototype, 'process');
    try {
      const before = singleFetchPath.viaGateway;
      expect(await query()).toContain('project_not_found');
      expect(singleFetchPath.viaGateway).toBe(before + 1);
      expect(process).toHaveBeenCalledTimes(1);
    } finally {
      process.mockRestore();
    }
  });

  it('answers a failed fetch as the gateway does, without fetching again', async () => {
    const query = gql('query($id: ID!) { project(id: $id) { id name } }', { id: projectId });
    await query();
    const process = jest.spyOn(InProcessDataSource.prototype, 'process').mockRejectedValue(new Error('connection refused'));
    try {
      const { on, off, direct } = await bothWays(query);
      expect(direct).toBe(false);
      expect(on).toContain('internal_error');
      expect(on).toBe(off);
      expect(process).toHaveBeenCalledTimes(3);
    } finally {
      process.mockRestore();
    }
  });
});
