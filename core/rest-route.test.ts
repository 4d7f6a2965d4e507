import { z } from 'zod';
import { headerName, paramName } from './field-names';
import { type AnyRoute, pathParams, route, variablesOf } from './rest-route';

const row = (path: string, derive: AnyRoute['derive'], variables?: AnyRoute['variables']): AnyRoute =>
  route({
    method: 'POST',
    path,
    summary: 's',
    tag: 't',
    operation: 'o',
    body: z.object({ retention_days: z.number().optional() }).strict(),
    derive,
    variables,
    select: (d) => d,
    status: 200,
    envelope: 'standard',
  });
const req = (
  params: Record<string, string>,
  body: Record<string, unknown> = {},
  headers: Record<string, string | string[]> = {},
) => ({ params, query: {}, body, headers, ip: '127.0.0.1' });

describe('variablesOf: path parameters by rule (decision 0370)', () => {
  it('names a parameter by rule: a trailing ID reads Id, other names stay', () => {
    expect(['projectID', 'runId', 'branch', 'aiJobID', 'id'].map(paramName)).toEqual([
      'projectId',
      'runId',
      'branch',
      'aiJobId',
      'id',
    ]);
    expect(pathParams('/api/v1/buckets/{bucketID}/relocations/{relocationID}')).toEqual(['bucketID', 'relocationID']);
    expect(pathParams('/api/v1/buckets')).toEqual([]);
  });

  it("'.' makes each path parameter a variable of its own", () => {
    const r = row('/b/{bucketID}/s/{subscriptionID}', { params: '.', body: 'input' });
    expect(variablesOf(r, req({ bucketID: 'b1', subscriptionID: 's1' }, { retention_days: 3 }))).toEqual({
      bucketId: 'b1',
      subscriptionId: 's1',
      input: { retentionDays: 3 },
    });
  });

  it('a name is the variable of the last path parameter; the ones before it follow the rule', () => {
    const r = row('/b/{bucketID}/relocations/{relocationID}', { params: 'id' });
    expect(variablesOf(r, req({ bucketID: 'b1', relocationID: 'r1' }))).toEqual({ bucketId: 'b1', id: 'r1' });
    expect(variablesOf(row('/s/{sessionID}', { params: 'id' }), req({ sessionID: 's1' }))).toEqual({ id: 's1' });
  });

  it("the row's own mapping wins, and without params the path derives nothing", () => {
    const r = row('/a/{assetID}', { params: 'id' }, (q) => ({ id: `x-${q.params.assetID}`, ifMatch: null }));
    expect(variablesOf(r, req({ assetID: 'a1' }))).toEqual({ id: 'x-a1', ifMatch: null });
    expect(variablesOf(row('/a/{assetID}', { body: '.' }), req({ assetID: 'a1' }, { retention_days: 1 }))).toEqual({
      retentionDays: 1,
    });
  });
});

describe('variablesOf: headers, a body as sent, named parameters and fixed values (decision 0395)', () => {
  it('names a header by rule and reads it as its meaning wants: If-Match as sent, an empty Idempotency-Key as none', () => {
    expect(['If-Match', 'Idempotency-Key'].map(headerName)).toEqual(['ifMatch', 'idempotencyKey']);
    const r = row('/a', { headers: ['If-Match', 'Idempotency-Key'] });
    expect(variablesOf(r, req({}))).toEqual({ ifMatch: null, idempotencyKey: null });
    expect(variablesOf(r, req({}, {}, { 'if-match': '"3"', 'idempotency-key': 'k' }))).toEqual({
      ifMatch: '"3"',
      idempotencyKey: 'k',
    });
    expect(variablesOf(r, req({}, {}, { 'if-match': '', 'idempotency-key': '' }))).toEqual({ ifMatch: '', idempotencyKey: null });
    expect(variablesOf(r, req({}, {}, { 'if-match': ['"1"', '"2"'] }))).toMatchObject({ ifMatch: '"1"' });
  });

  it('passes a body whole with its keys as sent', () => {
    const r = row('/a/{assetID}', { bodyAsSent: 'metadata', params: 'id' });
    expect(variablesOf(r, req({ assetID: 'a1' }, { retention_days: 3 }))).toEqual({ id: 'a1', metadata: { retention_days: 3 } });
  });

  it('a map names the parameters it lists, the others by rule; a name not in the path is refused', () => {
    const r = row('/a/{assetID}/versions/{versionID}/restore', { params: { assetID: 'id' } });
    expect(variablesOf(r, req({ assetID: 'a1', versionID: 'v1' }))).toEqual({ id: 'a1', versionId: 'v1' });
    const stray = row('/a/{assetID}', { params: { assetId: 'id' } });
    expect(() => variablesOf(stray, req({ assetID: 'a1' }))).toThrow(/derive\.params names assetId, not in the path/);
  });

  it('fixed values give way to what the request gives, and the mapping wins over both', () => {
    const fixed = { scope: 'database', projectId: null };
    const nested = row('/projects/{projectID}/databases/{databaseID}', { params: 'id', fixed });
    expect(variablesOf(nested, req({ projectID: 'p1', databaseID: 'd1' }))).toEqual({ ...fixed, id: 'd1', projectId: 'p1' });
    expect(variablesOf(row('/databases/{databaseID}', { params: 'id', fixed }), req({ databaseID: 'd1' }))).toEqual({
      ...fixed,
      id: 'd1',
    });
    const mapped = row('/a', { fixed: { scope: 'x' } }, () => ({ scope: 'y' }));
    expect(variablesOf(mapped, req({}))).toEqual({ scope: 'y' });
  });
});
