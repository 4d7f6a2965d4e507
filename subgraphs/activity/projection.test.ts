import { mapOperationEvent, normaliseOperationStatus } from '../../core/operations/activity-source';
import type { OperationEvent } from '../../core/operations/store';
import { merged } from './projection';
import { decisionPath, approvalView } from './views';
import type { AgentActionDoc } from './model';
import type { Principal } from '../../core/principal';

const ev = (over: Partial<OperationEvent>): OperationEvent => ({
  id: '6f1c1d7e-35a4-4f7e-9a57-0c8d1b7f3a11',
  accountId: 'acct',
  projectId: 'p1',
  resourceType: 'site',
  resourceId: 'p1',
  operationType: 'recovery_point',
  status: 'pending',
  step: 'queued',
  errorCode: null,
  updatedAt: '2026-11-23T10:00:00.000Z',
  ...over,
});

describe('operation events as activity', () => {
  it('normalises the engine statuses (a retry is waiting, never success)', () => {
    expect(normaliseOperationStatus(ev({}))).toBe('queued');
    expect(normaliseOperationStatus(ev({ errorCode: 'infrastructure_failure' }))).toBe('waiting');
    expect(normaliseOperationStatus(ev({ status: 'running' }))).toBe('running');
    expect(normaliseOperationStatus(ev({ status: 'failed' }))).toBe('failed');
    expect(normaliseOperationStatus(ev({ status: 'weird' as never }))).toBe('unknown');
    expect(mapOperationEvent(ev({ status: 'weird' as never }))!.terminal).toBeNull();
  });

  it('maps the first event with its creation time, a terminal one with evidence', () => {
    const first = mapOperationEvent(ev({}))!;
    expect(first).toMatchObject({
      id: `operation:${ev({}).id}`,
      title: 'Recovery point site',
      createdAt: ev({}).updatedAt,
      terminal: null,
    });
    const done = mapOperationEvent(ev({ status: 'completed', step: 'completed', updatedAt: '2026-11-23T10:00:05.000Z' }))!;
    expect(done).toMatchObject({
      status: 'completed',
      sourceStatus: 'completed',
      createdAt: null,
      terminal: { outcome: 'succeeded' },
    });
    expect(done.version).toBeGreaterThan(first.version);
    // Same millisecond: the engine's order (pending → running → end) still orders the versions.
    expect(mapOperationEvent(ev({ status: 'running' }))!.version).toBeGreaterThan(first.version);
  });

  it('refuses events that are not operations', () => {
    expect(mapOperationEvent({} as OperationEvent)).toBeNull();
    expect(mapOperationEvent(ev({ updatedAt: 'nope' }))).toBeNull();
  });

  it('merges in order to the same document whatever the replays', () => {
    const events = [
      ev({}),
      ev({ status: 'running', updatedAt: '2026-11-23T10:00:01.000Z' }),
      ev({ status: 'running', step: 'capture_database', updatedAt: '2026-11-23T10:00:02.000Z' }),
      ev({ status: 'completed', step: 'completed', updatedAt: '2026-11-23T10:00:03.000Z' }),
    ].map((e) => mapOperationEvent(e)!);
    const fold = (rs: typeof events) =>
      rs.reduce((d, r) => (d && d.version > r.version ? d : merged(d, r)), null as ReturnType<typeof merged> | null)!;
    const once = fold(events);
    const twice = fold([...events, ...events]);
    expect(twice).toEqual(once);
    expect(once).toMatchObject({
      current: false,
      createdAt: new Date('2026-11-23T10:00:00.000Z'),
      startedAt: new Date('2026-11-23T10:00:01.000Z'),
      finishedAt: new Date('2026-11-23T10:00:03.000Z'),
    });
  });
});

describe('approval view', () => {
  const base: AgentActionDoc = {
    _id: 'a1',
    accountId: 'acct',
    projectId: 'p1',
    objectiveId: 'o1',
    actionKey: 'application.release.create',
    actionHash: 'h',
    status: 'pending_approval',
    continuation: 'waiting_approvals',
    authorization: null,
    approvalId: 'ap1',
    approval: {
      id: 'ap1',
      status: 'pending',
      expiresAt: new Date(Date.now() + 60_000),
      decision: null,
      decidedAt: null,
      decidedBy: null,
    },
    principal: { type: 'cli', id: null },
    operations: [],
    errorCode: null,
    current: true,
    createdAt: new Date(),
    updatedAt: new Date(),
    finishedAt: null,
  };

  const owner: Principal = { accountId: 'acc', accountSlug: 'a', plan: 'free', keyId: 'k-owner', role: 'owner', scopes: [] };

  it('offers a decision only to a reader who may decide: an owner or the governance scope, never the requester', () => {
    const asked = { ...base, actionKey: 'assets.tag', principal: { type: 'api_key', id: 'k-agent' } };
    const canDecide = (reader: Principal | null) => approvalView(asked, { reader, now: new Date() })!.can_decide;
    expect(canDecide(owner)).toBe(true);
    expect(canDecide(null)).toBe(false);
    expect(canDecide({ ...owner, keyId: 'k-agent' })).toBe(false);
    expect(canDecide({ ...owner, keyId: 'k-member', role: 'member' })).toBe(false);
    expect(canDecide({ ...owner, keyId: 'k-member', role: 'member', scopes: ['approvals:decide'] })).toBe(true);
    expect(canDecide({ ...owner, keyId: 'k-agent', role: 'member', scopes: ['approvals:decide'] })).toBe(false);
  });

  it('withholds decisions on release and manifest actions', () => {
    expect(approvalView(base, { reader: owner, now: new Date() })).toMatchObject({
      can_decide: false,
      can_recover: false,
      decision_path: decisionPath('ap1'),
    });
    expect(approvalView({ ...base, actionKey: 'app.x.update' }, { reader: owner, now: new Date() })!.can_decide).toBe(true);
  });

  it('shows an unanswered approval past its expiry as expired', () => {
    const v = approvalView({ ...base, actionKey: 'x.y' }, { reader: owner, now: new Date(Date.now() + 120_000) })!;
    expect(v).toMatchObject({ status: 'expired', can_decide: false });
  });
});
