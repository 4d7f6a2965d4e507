import { mapOperationEvent } from '../../core/operations/activity-source';
import type { OperationEvent } from '../../core/operations/store';
import { AgentActionPerformers } from '../../core/agent-actions';
import { merged, mergedTasks } from './projection';
import { errorCode, healthView, LAGGING_AFTER_MS } from './source-health';

const ev = (over: Partial<OperationEvent>): OperationEvent => ({
  id: '6f1c1d7e-35a4-4f7e-9a57-0c8d1b7f3a11',
  accountId: 'acct',
  projectId: 'p1',
  resourceType: 'site',
  resourceId: 'p1',
  operationType: 'provision',
  status: 'running',
  step: 'queued',
  errorCode: null,
  updatedAt: '2026-11-23T10:00:00.000Z',
  ...over,
});

describe('tasks of an item', () => {
  it('keeps each reported step once, first-seen order, whatever order the events came in', () => {
    const events = [
      ev({ status: 'pending', step: 'queued', updatedAt: '2026-11-23T10:00:00.000Z' }),
      ev({ step: 'database', updatedAt: '2026-11-23T10:00:01.000Z' }),
      ev({ step: 'storage', updatedAt: '2026-11-23T10:00:02.000Z' }),
      ev({ step: 'database', updatedAt: '2026-11-23T10:00:03.000Z' }),
      ev({ status: 'completed', step: 'completed', updatedAt: '2026-11-23T10:00:04.000Z' }),
    ].map((e) => mapOperationEvent(e)!);
    const forward = events.reduce((tasks, r) => mergedTasks(tasks, r), [] as ReturnType<typeof mergedTasks>);
    const backward = [...events].reverse().reduce((tasks, r) => mergedTasks(tasks, r), [] as ReturnType<typeof mergedTasks>);
    expect(forward).toEqual(backward);
    expect(forward).toEqual([
      { name: 'database', firstAt: '2026-11-23T10:00:01.000Z', lastAt: '2026-11-23T10:00:03.000Z' },
      { name: 'storage', firstAt: '2026-11-23T10:00:02.000Z', lastAt: '2026-11-23T10:00:02.000Z' },
    ]);
    // The merge carries them from one item version to the next.
    const doc = events.reduce((d, r) => merged(d, r), null as ReturnType<typeof merged> | null);
    expect(doc!.tasks).toEqual(forward);
  });
});

describe('source health', () => {
  const at = (s: number) => new Date(Date.parse('2026-11-23T10:00:00Z') + s * 1000);
  const doc = (over: object) => ({
    _id: 'operation',
    lastEventAt: at(0),
    lastAppliedAt: at(1),
    lagMs: 1000,
    lastErrorAt: null,
    lastError: null,
    ...over,
  });
  it('is idle without events, ok when current, lagging when far behind, failing while the last attempt failed', () => {
    expect(healthView(null).status).toBe('idle');
    expect(healthView(doc({}))).toMatchObject({ status: 'ok', lag_ms: 1000, last_error: null });
    expect(healthView(doc({ lagMs: LAGGING_AFTER_MS + 1 })).status).toBe('lagging');
    expect(healthView(doc({ lastErrorAt: at(2), lastError: 'database_error' }))).toMatchObject({
      status: 'failing',
      last_error: { code: 'database_error', at: at(2).toISOString() },
    });
    // An event applied after the error heals it (the error stays visible as history).
    expect(healthView(doc({ lastErrorAt: at(0), lastError: 'database_error' })).status).toBe('ok');
  });
  it('names the kind of failure, never its message', () => {
    expect(errorCode(new Error('source operation mapped an item id x:1'))).toBe('invalid_event');
    expect(errorCode(new Error('activity item operation:1 kept changing under the projection'))).toBe('projection_contention');
    const mongo = new Error('connect ECONNREFUSED 10.0.0.1:27017');
    mongo.name = 'MongoNetworkError';
    expect(errorCode(mongo)).toBe('database_error');
    expect(errorCode('x')).toBe('projection_error');
  });
});

describe('agent-action performers', () => {
  it('chooses the longest registered prefix and refuses a prefix without a dot', () => {
    const r = new AgentActionPerformers();
    const a = { perform: async () => ({ operations: [] }) };
    const b = { perform: async () => ({ operations: [] }) };
    r.register('assets.', a);
    r.register('assets.workflow.', b);
    expect(r.performerFor('assets.tag')).toBe(a);
    expect(r.performerFor('assets.workflow.continue')).toBe(b);
    expect(r.performerFor('publisher.site.restart')).toBeNull();
    expect(() => r.register('assets', a)).toThrow();
  });
});
