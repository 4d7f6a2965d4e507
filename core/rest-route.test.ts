import { z } from 'zod';
import { paramName } from './field-names';
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
const req = (params: Record<string, string>, body: Record<string, unknown> = {}) => ({
  params,
  query: {},
  body,
  headers: {},
  ip: '127.0.0.1',
});

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
