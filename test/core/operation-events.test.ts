import { mapOperationEvent } from '../../core/operations/activity-source';
import type { OperationModel } from '../../core/operations/model';
import { OperationStore, type OperationEvent } from '../../core/operations/store';

/**
 * The enqueue event carries who started the operation (it never changes), so the activity
 * projection of a new operation reads nothing but its own item (docs/decisions/0060-activity-read-models.md: one round trip less on
 * the way to the live feeds). Later events leave it out.
 */
describe('operation events', () => {
  const store = new OperationStore({} as OperationModel, 'p.operations');
  const now = new Date('2026-11-24T00:00:00.000Z');
  const fields = {
    _id: 'op-1',
    accountId: 'acct',
    projectId: 'proj',
    resourceType: 'site',
    resourceId: 'proj',
    operationType: 'provision',
    status: 'pending' as const,
    step: 'queued',
    steps: [],
    input: null,
    result: null,
    errorCode: null,
    errorMessage: null,
    attempt: 0,
    maxAttempts: 3,
    runAfter: now,
    lease: { owner: null, token: 0, until: null },
    heartbeatAt: null,
    createdAt: now,
    updatedAt: now,
    startedAt: null,
    finishedAt: null,
    deadlineAt: now,
    traceparent: null,
  };

  it('the enqueue event names the initiator, and the activity record takes it from there', () => {
    const initiator = { type: 'api_key', id: 'key-1' };
    const doc = store.newDocument({ ...fields, initiator });
    const payload = doc.outbox[0].payload as OperationEvent;
    expect(payload.initiator).toEqual(initiator);
    expect(mapOperationEvent(payload)?.initiator).toEqual(initiator);
  });

  it('says so when nobody is named, and later events leave the initiator out', () => {
    const doc = store.newDocument({ ...fields, initiator: null });
    expect(doc.outbox[0].payload).toHaveProperty('initiator', null);
    const later = store.event(fields, 'running', 'boot', null, now).payload as OperationEvent;
    expect(later).not.toHaveProperty('initiator');
    expect(mapOperationEvent(later)?.initiator).toBeNull();
  });
});
