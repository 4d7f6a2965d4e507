import { PlatformError } from '../../core/errors';
import '../../core/site-actions';
import { randomBytes, randomUUID } from 'node:crypto';
import type mongoose from 'mongoose';
import type { EventBus, Subscription } from '../../core/events/event-bus';
import { createKafkaEventBus } from '../../core/events/kafka-event-bus';
import { childLogger } from '../../core/logger';
import { connectMongo, ensureIndexes } from '../../core/mongo';
import { OperationEngine } from '../../core/operations';
import { operationActivitySource } from '../../core/operations/activity-source';
import { Ports, type ProjectDirectory, type ProjectRecord } from '../../core/ports';
import type { Principal } from '../../core/principal';
import { ActivityService } from '../../subgraphs/activity/service';

// The machine is shared: projections and feeds get minutes, not seconds, under heavy load.
jest.setTimeout(180_000);
/**
 * The activity service against the real MongoDB-wire server and Kafka broker: operations run by a
 * real engine reach the read model through the topic, replaying the topic rebuilds the same
 * projection, and every read and decision rule answers as spec 4.6/4.7/7.5 say.
 */

async function until<T>(fn: () => Promise<T | undefined | null | false>, timeoutMs = 90_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function rejects(p: Promise<unknown>): Promise<{ code: string; status: number; details: any }> {
  try {
    await p;
  } catch (e) {
    return e as { code: string; status: number; details: any };
  }
  throw new Error('expected a rejection');
}

describe('activity service (real MongoDB-wire server and Kafka)', () => {
  const run = randomBytes(4).toString('hex');
  const prefix = `t_act_${run}`;
  const topic = `${prefix}.operations`;
  let conn: mongoose.Connection;
  let conn2: mongoose.Connection;
  let bus: EventBus;
  let engine: OperationEngine;
  let svc: ActivityService;
  const subs: Subscription[] = [];
  const projects = new Map<string, ProjectRecord>();
  const directory: ProjectDirectory = {
    async createProject(accountId, name) {
      const p = { id: randomUUID(), accountId, name, sourceType: null, createdAt: new Date() };
      projects.set(p.id, p);
      return p;
    },
    async findProject(id) {
      return projects.get(id) ?? null;
    },
    async canAccessProject(principal, id) {
      return Boolean(principal && projects.get(id)?.accountId === principal.accountId);
    },
    async ensureAccount(slug) {
      return { id: `acct-${slug}`, slug, plan: 'pro' };
    },
  };
  const ports = new Ports();
  ports.provide('projects', directory);
  ports.provide('activitySources', []);
  // The publisher's siteActions port as this test needs it: a project with a provisioned site gets
  // its restart enqueued under the caller's id (the e2e test runs the real port, lock and fencing).
  ports.provide('siteActions', {
    async run(r) {
      if (await engine.get(r.operationId)) return { operationId: r.operationId };
      const provisioned = await engine.model.findOne({ projectId: r.projectId, operationType: 'provision' }, { _id: 1 }).lean();
      if (!provisioned) throw new PlatformError('site_not_found', 409, 'the project has no publishing site');
      await engine.enqueue({
        id: r.operationId,
        accountId: r.accountId,
        projectId: r.projectId,
        resourceType: 'site',
        resourceId: r.projectId,
        operationType: r.action,
        initiator: r.initiator,
      });
      return { operationId: r.operationId };
    },
  });

  const principal = (accountId: string, role: Principal['role'] = 'owner'): Principal => ({
    accountId,
    accountSlug: accountId.replace(/^acct-/, ''),
    plan: 'pro',
    keyId: `key-${accountId}`,
    role,
    scopes: [],
  });

  function service(c: mongoose.Connection) {
    return new ActivityService({
      conn: c,
      bus,
      engine,
      ports,
      log: childLogger('activity-test'),
      topicOf: (n) => `${prefix}.${n}`,
    });
  }

  async function consume(s: ActivityService, group: string) {
    subs.push(
      await bus.subscribe({
        groupId: group,
        topics: [topic],
        fromBeginning: true,
        waitForAssignment: true,
        handler: (m) => s.consume(operationActivitySource, m.value),
      }),
    );
  }

  async function tenant() {
    const slug = `a${randomBytes(4).toString('hex')}`;
    const p = principal(`acct-${slug}`);
    const project = await directory.createProject(p.accountId, 'site');
    return { p, slug, projectId: project.id };
  }

  beforeAll(async () => {
    conn = await connectMongo(`mongodb://127.0.0.1:27017/${prefix}`);
    conn2 = await connectMongo(`mongodb://127.0.0.1:27017/${prefix}_replay`);
    bus = createKafkaEventBus({ clientId: prefix });
    await bus.ensureTopics([topic, `${prefix}.activity.operation_updates`, `${prefix}.activity.agent_updates`]);
    engine = new OperationEngine({ conn, bus, topic, pollMs: 50, leaseMs: 2000, relayIntervalMs: 50 });
    for (const type of ['provision', 'restart']) {
      engine.register(type, async (ctx) => {
        await ctx.step('start_runtime', async () => null);
        await ctx.step('health_check', async () => null);
        return { ok: true };
      });
    }
    svc = service(conn);
    service(conn2);
    await ensureIndexes(conn);
    await ensureIndexes(conn2);
    engine.start();
    await consume(svc, `${prefix}-live`);
  });

  afterAll(async () => {
    await engine?.stop(1000);
    await Promise.all(subs.map((s) => s.stop()));
    await bus?.close();
    // mongo-java-server cannot drop a database whose compound index has an empty H2 twin; not ours to keep.
    await conn?.dropDatabase().catch(() => undefined);
    await conn2?.dropDatabase().catch(() => undefined);
    await conn?.close();
    await conn2?.close();
  });

  async function provision(t: { p: Principal; projectId: string }) {
    const op = await engine.enqueue({
      accountId: t.p.accountId,
      projectId: t.projectId,
      resourceType: 'site',
      resourceId: t.projectId,
      operationType: 'provision',
    });
    return op._id;
  }

  async function completed(t: { p: Principal; projectId: string }, id: string) {
    return until(async () => {
      const r = await svc.operationActivity(t.p, { type: 'project', id: t.projectId }, {});
      return r.history.items.find((i) => i.id === `operation:${id}`);
    });
  }

  it('projects a site provisioning from the topic into the contract-v1 shape', async () => {
    const t = await tenant();
    const opId = await provision(t);
    const item = await completed(t, opId);
    expect(item).toEqual({
      id: `operation:${opId}`,
      source: { kind: 'operation', record_id: opId, status: 'completed' },
      resource: { type: 'site', id: t.projectId },
      project: { type: 'project', id: t.projectId },
      environment: null,
      title: 'Provision site',
      type: 'provision',
      status: 'completed',
      terminal: { outcome: 'succeeded', at: expect.any(String), error_code: null },
      current_step: null,
      initiator: null,
      channel: null,
      executor: 'operation_engine',
      created_at: expect.any(String),
      started_at: expect.any(String),
      updated_at: expect.any(String),
      finished_at: expect.any(String),
      parents: [],
      related_resources: [{ type: 'project', id: t.projectId, relation: 'belongs_to' }],
      tasks: expect.any(Array),
      links: [{ rel: 'operation', href: `/api/v1/publisher/projects/${t.projectId}/operations/${opId}` }],
    });
    // Every task the engine reported is done once the operation completed.
    for (const task of item!.tasks) expect(task).toMatchObject({ status: 'completed', name: expect.any(String) });
    const r = await svc.operationActivity(t.p, { type: 'project', id: t.projectId }, {});
    expect(r).toMatchObject({
      contract_version: 1,
      scope: { type: 'project', id: t.projectId },
      current: [],
      current_complete: true,
      history: { limit: 25, complete: true, has_more: false, next_cursor: null },
      availability: { complete: true, sources: [{ source_kind: 'operation', role: 'operations', state: 'available' }] },
      unresolved_references: [],
    });
    const exact = await svc.operationActivityItem(t.p, { type: 'project', id: t.projectId }, `operation:${opId}`);
    expect(exact.item).toEqual(item);
  });

  it('answers a complete empty result for a project with no activity', async () => {
    const t = await tenant();
    const r = await svc.operationActivity(t.p, { type: 'project', id: t.projectId }, {});
    expect(r.current).toEqual([]);
    expect(r.history).toEqual({ items: [], limit: 25, complete: true, has_more: false, next_cursor: null });
  });

  it('refuses bad limits, cursors and ids with 400, and conceals other accounts with 404', async () => {
    const t = await tenant();
    const other = await tenant();
    const scope = { type: 'project' as const, id: t.projectId };
    for (const limit of ['0', '101', 'abc', '', '1.5', '-1']) {
      expect(await rejects(svc.operationActivity(t.p, scope, { limit }))).toMatchObject({ status: 400, code: 'invalid_limit' });
    }
    expect(await rejects(svc.operationActivity(t.p, scope, { limit: ['1', '2'] }))).toMatchObject({ status: 400 });
    for (const cursor of ['', 'abc', 'x.y']) {
      expect(await rejects(svc.operationActivity(t.p, scope, { cursor }))).toMatchObject({ status: 400, code: 'invalid_cursor' });
    }
    expect(await rejects(svc.operationActivity(t.p, { type: 'project', id: 'nope' }, {}))).toMatchObject({ status: 400 });
    expect(await rejects(svc.operationActivityItem(t.p, scope, 'operation:nope'))).toMatchObject({ status: 400 });
    expect(await rejects(svc.operationActivity(other.p, scope, {}))).toMatchObject({ status: 404, code: 'activity_not_found' });
    const opId = await provision(t);
    await completed(t, opId);
    expect(
      await rejects(svc.operationActivityItem(other.p, { type: 'project', id: other.projectId }, `operation:${opId}`)),
    ).toMatchObject({
      status: 404,
    });
  });

  it('walks history with a cursor, newest first, with no duplicates or gaps while new operations arrive', async () => {
    const t = await tenant();
    const first = [];
    for (let i = 0; i < 7; i++) first.push(await provision(t));
    await until(
      async () =>
        (await svc.operationActivity(t.p, { type: 'project', id: t.projectId }, { limit: '100' })).history.items.length === 7,
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    let arrivals = 0;
    for (;;) {
      const r = await svc.operationActivity(t.p, { type: 'project', id: t.projectId }, { limit: '2', cursor });
      seen.push(...r.history.items.map((i) => i.id));
      if (arrivals++ < 2) await provision(t); // newer than every page already read
      if (!r.history.has_more) break;
      cursor = r.history.next_cursor!;
    }
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.sort()).toEqual(first.map((id) => `operation:${id}`).sort());
    const all = (await until(async () => {
      const r = await svc.operationActivity(t.p, { type: 'project', id: t.projectId }, { limit: '100' });
      return r.history.items.length === 9 && r;
    }))!.history.items;
    const keys = all.map((i) => [i.created_at!, i.id]);
    expect(keys).toEqual([...keys].sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? 1 : -1) : a[0] < b[0] ? 1 : -1)));
  });

  it('rebuilds the same projection by replaying the topic from the start', async () => {
    const t = await tenant();
    await completed(t, await provision(t));
    const replay = service(conn2);
    await consume(replay, `${prefix}-replay-${randomBytes(3).toString('hex')}`);
    const live = await svc.models.Item.find({}).sort({ _id: 1 }).lean().exec();
    await until(
      async () => (await replay.models.Item.countDocuments({ current: false })) >= live.filter((d) => !d.current).length,
    );
    await until(async () => {
      const a = await svc.models.Item.find({ current: false }).sort({ _id: 1 }).lean().exec();
      const b = await replay.models.Item.find({ _id: { $in: a.map((d) => d._id) } })
        .sort({ _id: 1 })
        .lean()
        .exec();
      return JSON.stringify(a) === JSON.stringify(b);
    });
  });

  it('answers 503 activity_sources_unavailable with shaped data when the read model fails, and 503 activity_access_unavailable when access cannot be checked', async () => {
    const t = await tenant();
    const find = svc.models.Item.find;
    svc.models.Item.find = (() => {
      throw new Error('read model down');
    }) as never;
    let e;
    try {
      e = await rejects(svc.operationActivity(t.p, { type: 'project', id: t.projectId }, {}));
    } finally {
      svc.models.Item.find = find;
    }
    expect(e).toMatchObject({ status: 503, code: 'activity_sources_unavailable' });
    expect(e.details.data).toMatchObject({
      contract_version: 1,
      current: [],
      history: { items: [], has_more: false },
      availability: { complete: false, sources: [{ source_kind: 'operation', state: 'unavailable' }] },
    });
    const check = directory.canAccessProject;
    directory.canAccessProject = async () => {
      throw new Error('directory down');
    };
    try {
      e = await rejects(svc.operationActivity(t.p, { type: 'project', id: t.projectId }, {}));
    } finally {
      directory.canAccessProject = check;
    }
    expect(e).toMatchObject({ status: 503, code: 'activity_access_unavailable' });
  });

  it('caps pending agent actions at 1,000 and says the list is incomplete', async () => {
    const t = await tenant();
    const now = Date.now();
    const docs = Array.from({ length: 1001 }, (_, i) => {
      const id = randomUUID();
      return {
        _id: id,
        accountId: t.p.accountId,
        projectId: t.projectId,
        objectiveId: randomUUID(),
        actionKey: 'x.y.update',
        actionHash: 'h',
        status: 'pending_approval',
        continuation: 'waiting_approvals',
        authorization: null,
        approvalId: randomUUID(),
        approval: {
          id: randomUUID(),
          status: 'pending',
          expiresAt: new Date(now + 3_600_000),
          decision: null,
          decidedAt: null,
          decidedBy: null,
        },
        principal: { type: 'cli', id: null },
        operations: [],
        errorCode: null,
        current: true,
        createdAt: new Date(now - i),
        updatedAt: new Date(now - i),
        finishedAt: null,
      };
    });
    for (let i = 0; i < docs.length; i += 500) await svc.models.Action.insertMany(docs.slice(i, i + 500));
    const list = await svc.agentActivity(t.p, { type: 'project', id: t.projectId }, {});
    expect(list.pending).toHaveLength(1000);
    expect(list.pending_complete).toBe(false);
    expect(list.current_complete).toBe(true);
    expect(list.pending[0].id).toBe(`agent_tool_execution:${docs[0]._id}`);
  });

  describe('agent actions and decisions', () => {
    it('an approved publisher.site.restart originates a real restart operation, once', async () => {
      const t = await tenant();
      await completed(t, await provision(t));
      const acted = await svc.act({
        accountSlug: t.slug,
        projectId: t.projectId,
        actionKey: 'publisher.site.restart',
        principal: { type: 'cli', id: null },
      });
      expect(acted).toEqual({
        action_id: expect.stringMatching(/^agent_tool_execution:[0-9a-f-]{36}$/),
        approval_id: expect.any(String),
        action_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
        objective_id: expect.any(String),
      });
      const list = await svc.agentActivity(t.p, { type: 'project', id: t.projectId }, {});
      expect(list.pending).toHaveLength(1);
      const pending = list.pending[0];
      expect(pending).toMatchObject({
        id: acted.action_id,
        status: 'pending_approval',
        authorization: null,
        continuation: { status: 'waiting_approvals' },
        approval: {
          id: acted.approval_id,
          status: 'pending',
          can_decide: true,
          action_hash: acted.action_hash,
          decision_path: `/api/v1/agents/approvals/${acted.approval_id}/decision`,
          can_recover: false,
          recovery: null,
        },
      });
      const wrong = await rejects(svc.decide(t.p, acted.approval_id!, { decision: 'approved', action_hash: 'f'.repeat(64) }));
      expect(wrong).toMatchObject({ status: 409, code: 'action_changed' });
      expect(await engine.model.countDocuments({ projectId: t.projectId, operationType: 'restart' })).toBe(0);

      const decided = await svc.decide(t.p, acted.approval_id!, { decision: 'approved', action_hash: acted.action_hash });
      expect(decided).toMatchObject({
        id: acted.approval_id,
        status: 'approved',
        decision: 'approved',
        continuation: { status: 'settled' },
      });
      expect(decided.continuation.operations).toEqual([
        {
          activity_id: expect.stringMatching(/^operation:/),
          resource: { type: 'site', id: t.projectId },
          relation: 'originated',
          link: expect.any(String),
        },
      ]);
      const again = await svc.decide(t.p, acted.approval_id!, { decision: 'approved', action_hash: acted.action_hash });
      expect(again.continuation.operations).toEqual(decided.continuation.operations);
      expect(await engine.model.countDocuments({ projectId: t.projectId, operationType: 'restart' })).toBe(1);
      const opposite = await rejects(svc.decide(t.p, acted.approval_id!, { decision: 'denied', action_hash: acted.action_hash }));
      expect(opposite).toMatchObject({ status: 409, code: 'decision_conflict' });

      const opId = decided.continuation.operations[0].activity_id.slice('operation:'.length);
      const originated = await completed(t, opId);
      expect(originated).toMatchObject({
        initiator: { type: 'agent_tool_execution', id: acted.action_id.split(':')[1] },
        channel: 'agent',
        parents: [{ type: 'agent_tool_execution', activity_id: acted.action_id, objective_id: acted.objective_id }],
      });
      const item = await svc.agentActivityItem(t.p, { type: 'project', id: t.projectId }, acted.action_id);
      expect(item.item).toMatchObject({
        status: 'succeeded',
        authorization: { outcome: 'human_approved', basis: 'human_decision' },
      });
      // The objective's operation activity is the operation the action originated.
      const byObjective = await svc.operationActivity(t.p, { type: 'objective', id: acted.objective_id }, {});
      expect(byObjective.history.items.map((i) => i.id)).toEqual([`operation:${opId}`]);
    });

    it('an expired pending approval answers 410 and starts nothing', async () => {
      const t = await tenant();
      const acted = await svc.act({
        accountSlug: t.slug,
        projectId: t.projectId,
        actionKey: 'publisher.site.restart',
        expiresInS: 0,
        principal: { type: 'cli', id: null },
      });
      const e = await rejects(svc.decide(t.p, acted.approval_id!, { decision: 'approved', action_hash: acted.action_hash }));
      expect(e).toMatchObject({ status: 410, code: 'approval_expired' });
      const list = await svc.agentActivity(t.p, { type: 'project', id: t.projectId }, {});
      expect(list.history.items[0]).toMatchObject({ status: 'expired', approval: { status: 'expired', can_decide: false } });
    });

    it('withholds decisions on application manifest and release actions', async () => {
      const t = await tenant();
      const acted = await svc.act({
        accountSlug: t.slug,
        projectId: t.projectId,
        actionKey: 'application.release.rollback',
        principal: { type: 'cli', id: null },
      });
      const list = await svc.agentActivity(t.p, { type: 'project', id: t.projectId }, {});
      expect(list.pending[0].approval).toMatchObject({ can_decide: false, can_recover: false, recovery: null });
      expect(
        await rejects(svc.decide(t.p, acted.approval_id!, { decision: 'approved', action_hash: acted.action_hash })),
      ).toMatchObject({
        status: 409,
        code: 'decision_withheld',
      });
    });

    it('read-only keys without approval are automatic by the read-only rule; denial cancels', async () => {
      const t = await tenant();
      const read = await svc.act({
        accountSlug: t.slug,
        projectId: t.projectId,
        actionKey: 'publisher.site.get',
        approval: 'none',
        principal: { type: 'cli', id: null },
      });
      expect(read.approval_id).toBeNull();
      const denied = await svc.act({
        accountSlug: t.slug,
        projectId: t.projectId,
        actionKey: 'application.config.update',
        principal: { type: 'cli', id: null },
      });
      const d = await svc.decide(t.p, denied.approval_id!, { decision: 'denied', action_hash: denied.action_hash });
      expect(d).toMatchObject({ status: 'denied', continuation: { status: 'not_required', action_status: 'cancelled' } });
      const list = await svc.agentActivity(t.p, { type: 'project', id: t.projectId }, {});
      const byId = Object.fromEntries(list.history.items.map((i) => [i.id, i]));
      expect(byId[read.action_id]).toMatchObject({
        status: 'succeeded',
        authorization: { outcome: 'automatic', basis: 'read_only_rule' },
        approval: null,
      });
      expect(byId[denied.action_id]).toMatchObject({ status: 'cancelled', authorization: null });
      // Unknown approvals and other accounts' approvals are 404.
      const other = await tenant();
      expect(
        await rejects(svc.decide(other.p, denied.approval_id!, { decision: 'denied', action_hash: denied.action_hash })),
      ).toMatchObject({
        status: 404,
        code: 'activity_not_found',
      });
    });

    it('a committed decision whose continuation cannot start answers 503 with the recorded approval; recovery completes it', async () => {
      const t = await tenant();
      await completed(t, await provision(t));
      const acted = await svc.act({
        accountSlug: t.slug,
        projectId: t.projectId,
        actionKey: 'publisher.site.restart',
        principal: { type: 'cli', id: null },
      });
      const enqueue = engine.enqueue.bind(engine);
      engine.enqueue = async () => {
        throw new Error('store down');
      };
      let e;
      try {
        e = await rejects(svc.decide(t.p, acted.approval_id!, { decision: 'approved', action_hash: acted.action_hash }));
      } finally {
        engine.enqueue = enqueue;
      }
      expect(e).toMatchObject({ status: 503, code: 'approval_continuation_unavailable' });
      expect(e.details.approval).toMatchObject({
        status: 'approved',
        can_recover: true,
        recovery: { method: 'POST', request: { decision: 'approved', action_hash: acted.action_hash } },
        continuation: { status: 'unavailable' },
      });
      const recovered = await svc.decide(t.p, acted.approval_id!, e.details.approval.recovery.request);
      expect(recovered).toMatchObject({ continuation: { status: 'settled', action_status: 'succeeded' } });
      expect(recovered.continuation.operations).toHaveLength(1);
    });
  });
});
