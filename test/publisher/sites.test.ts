import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { ConnectedNodes } from '../../nodes/registry';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { ISO, PREFIX, UUID, errorBody, projectPath, runningSite, settled, waitForOperation } from './support';
import { MAX_SITE_NAME_LENGTH } from '../../subgraphs/publisher/limits';

let t: TestPlatform;

beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t.stop();
});

describe('runtime options, create, metadata and operations', () => {
  it('lists the tested runtimes (200) and needs a bearer key (401)', async () => {
    const { key } = await t.createKey();
    const res = await t.rest('GET', `${PREFIX}/runtime-options`, { key });
    expect(res.status).toBe(200);
    expect(res.body.data.map((o: any) => o.version)).toEqual(['5.120.3', '5.126.0', '5.130.5', '5.130.6']);
    expect(res.body.data.find((o: any) => o.version === '5.130.6').upgrade_predecessors).toEqual(['5.130.5']);
    const anonymous = await t.rest('GET', `${PREFIX}/runtime-options`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(errorBody('unauthenticated'));
  });

  it('creates a hosted site (202), validates the create body (400) and serves metadata with domain and mail flags', async () => {
    const { key } = await t.createKey();
    const missing = await t.rest('POST', `${PREFIX}/sites`, { key, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('invalid_request');
    const unknown = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'X', runtime_version: '4.0.0' } });
    expect(unknown.status).toBe(400);
    // Not in the catalog: the row's enum (documented in OpenAPI) refuses it as a field error.
    expect(unknown.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'runtime_version' }] } });
    const extra = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'X', colour: 'red' } });
    expect(extra.status).toBe(400);

    const projectId = await runningSite(t, key, { name: 'Metadata Site', runtime_version: '5.126.0', mail_enabled: true });
    const meta = await t.rest('GET', projectPath(projectId, '/metadata'), { key });
    expect(meta.status).toBe(200);
    expect(meta.body.data).toEqual({
      installation: expect.objectContaining({
        runtime_version: '5.126.0',
        status: 'running',
        environment: 'production',
        source_project_id: null,
        domain: null,
        deployment_mode: 'hosted',
      }),
      project: {
        id: projectId,
        name: 'Metadata Site',
        source_type: 'publisher',
        runtime: 'publisher',
        created_at: expect.stringMatching(ISO),
      },
      database: { id: expect.stringMatching(UUID), engine: 'mysql', version: '8.0', storage_gb: 5, status: 'available' },
      active_operation: null,
      domain: null,
      mail: { enabled: true, transactional_configured: false, sender_verified: false, newsletter_provider_configured: false },
      // A hosted site runs on the platform's own pool, not on a connected node.
      node: null,
      // The simulated executor runs no process.
      process: null,
    });
  });

  it('serves the full durable operation (200); another project or a foreign id is 404', async () => {
    const { key } = await t.createKey();
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Ops' } });
    const { project, operation } = created.body.data;
    const op = await waitForOperation(t, key, project.id, operation.id);
    expect(op).toEqual({
      id: operation.id,
      project_id: project.id,
      resource_type: 'site',
      resource_id: project.id,
      operation_type: 'provision',
      status: 'completed',
      step: 'completed',
      steps: expect.any(Array),
      attempt: 1,
      max_attempts: expect.any(Number),
      error_code: null,
      error_message: null,
      result: { siteStatus: 'running' },
      created_at: expect.stringMatching(ISO),
      updated_at: expect.stringMatching(ISO),
      started_at: expect.stringMatching(ISO),
      finished_at: expect.stringMatching(ISO),
    });
    const other = await t.createKey();
    const foreign = await t.rest('GET', projectPath(project.id, `/operations/${operation.id}`), { key: other.key });
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual(errorBody('project_not_found'));
    const missing = await t.rest('GET', projectPath(project.id, '/operations/00000000-0000-4000-8000-000000000000'), { key });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('operation_not_found');
  });

  it('conceals a foreign or unknown project as 404 on every project route', async () => {
    const { key } = await t.createKey();
    const owner = await t.createKey();
    const projectId = await runningSite(t, owner.key);
    const reads = ['/metadata', '/history', '/recovery-points', '/mail/sender', '/mail/provider'];
    for (const suffix of reads) {
      for (const id of [projectId, 'not-a-uuid']) {
        const res = await t.rest('GET', projectPath(id, suffix), { key });
        expect([suffix, res.status, res.body.error.code]).toEqual([suffix, 404, 'project_not_found']);
      }
    }
    const writes: Array<[string, string, unknown]> = [
      ['POST', '/actions', { action: 'restart' }],
      ['POST', '/domain', { domain: 'example.com' }],
      ['POST', '/recovery-points', {}],
      ['POST', `/recovery-points/${projectId}/restore`, undefined],
      ['POST', '/staging', {}],
      ['POST', '/upgrades', { target_version: '5.130.6' }],
      ['PUT', '/mail/sender', { sender_email: 'a@example.com' }],
      ['PUT', '/mail/provider', { domain: 'example.com', region: 'us', api_key: 'key-12345678', from_email: 'n@example.com' }],
      ['DELETE', '/mail/provider', undefined],
    ];
    for (const [method, suffix, body] of writes) {
      const res = await t.rest(method, projectPath(projectId, suffix), { key, body });
      expect([suffix, res.status, res.body.error.code]).toEqual([suffix, 404, 'project_not_found']);
    }
  });
});

describe('lifecycle actions', () => {
  it('stops, starts and restarts (202 each); a wrong state is 409 invalid_site_state; an unknown action 400', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const act = (action: string) => t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action } });

    const start = await act('start');
    expect(start.status).toBe(409);
    expect(start.body.error).toMatchObject({ code: 'invalid_site_state', details: { action: 'start', site_status: 'running' } });
    expect((await act('retry_provisioning')).status).toBe(409);
    const bad = await act('reboot');
    expect(bad.status).toBe(400);
    // The REST row's enum refuses it before the service: a field error like any other.
    expect(bad.body.error).toMatchObject({ code: 'invalid_request', details: { fields: [{ field: 'action' }] } });

    const stop = await act('stop');
    expect(stop.status).toBe(202);
    expect(stop.body.data.operation).toMatchObject({ operation_type: 'stop', status: 'pending', step: 'queued' });
    expect((await waitForOperation(t, key, projectId, stop.body.data.operation.id)).status).toBe('completed');
    expect((await t.rest('GET', projectPath(projectId, '/metadata'), { key })).body.data.installation.status).toBe('stopped');
    expect((await act('restart')).status).toBe(409);

    const started = await act('start');
    expect(started.status).toBe(202);
    expect((await waitForOperation(t, key, projectId, started.body.data.operation.id)).status).toBe('completed');
    const restarted = await act('restart');
    expect(restarted.status).toBe(202);
    await waitForOperation(t, key, projectId, restarted.body.data.operation.id);
  });

  it('deletes a site (202): its operation stays readable, the site answers 404 and its hosted-site slot is free again', async () => {
    const { key, accountId } = await t.createKey();
    const projectId = await runningSite(t, key);
    const holders = async () =>
      (await t.platform.services.publisher.sites.models.SiteQuota.findById(accountId).lean())?.holders ?? [];
    expect(await holders()).toContain(projectId);
    const del = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'delete' } });
    expect(del.status).toBe(202);
    expect(del.body.data.operation).toMatchObject({ operation_type: 'delete', status: 'pending' });
    const op = await waitForOperation(t, key, projectId, del.body.data.operation.id);
    expect(op.steps.map((s: any) => s.id)).toEqual(['drain_traffic', 'stop_runtime', 'delete_site']);
    expect(op.status).toBe('completed');
    expect((await t.rest('GET', projectPath(projectId, '/metadata'), { key })).status).toBe(404);
    expect((await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'delete' } })).status).toBe(404);
    expect(await holders()).not.toContain(projectId);
  });

  it('allows one lifecycle operation per site: a second request of any kind gets 409 operation_in_progress', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    // Slow steps keep the restart running while the other requests arrive, however busy the machine.
    const simulated = t.platform.services.publisher.simulated;
    const stepDelay = simulated.stepDelayMs;
    simulated.stepDelayMs = 3_000;
    const restart = await t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'restart' } });
    expect(restart.status).toBe(202);
    const second: Array<[string, unknown]> = [
      ['/actions', { action: 'stop' }],
      ['/recovery-points', { reason: 'while busy' }],
      ['/staging', {}],
      ['/upgrades', { target_version: '5.130.6' }],
    ];
    for (const [suffix, body] of second) {
      const res = await t.rest('POST', projectPath(projectId, suffix), { key, body });
      expect([suffix, res.status, res.body.error.code]).toEqual([suffix, 409, 'operation_in_progress']);
      expect(res.body.error.details).toEqual({ operation_id: restart.body.data.operation.id, operation_type: 'restart' });
    }
    simulated.stepDelayMs = stepDelay;
    await settled(t, key, projectId);
  });

  it('lets exactly one of many concurrent requests take the lock', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2
          ? t.rest('POST', projectPath(projectId, '/actions'), { key, body: { action: 'restart' } })
          : t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body: {} }),
      ),
    );
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    // Every other one is refused as busy (listed, so a failure shows what came instead).
    const refused = results.filter((r) => r.status !== 202);
    expect(refused.map((r) => [r.status, r.body.error?.code])).toEqual(refused.map(() => [409, 'operation_in_progress']));
    await settled(t, key, projectId);
  });

  it('retries a failed provisioning', async () => {
    const { key } = await t.createKey();
    const name = `Retry ${Date.now()}`;
    t.platform.services.publisher.simulated.injectFailure({
      operationType: 'provision',
      step: 'pull_image',
      retriable: false,
      match: (op) => (op.input as { name?: string }).name === name,
    });
    const created = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name } });
    const { project, operation } = created.body.data;
    const failed = await waitForOperation(t, key, project.id, operation.id);
    expect(failed).toMatchObject({ status: 'failed', error_code: 'infrastructure_failure', error_message: expect.any(String) });
    expect((await t.rest('GET', projectPath(project.id, '/metadata'), { key })).body.data.installation.status).toBe(
      'provision_failed',
    );
    const retry = await t.rest('POST', projectPath(project.id, '/actions'), { key, body: { action: 'retry_provisioning' } });
    expect(retry.status).toBe(202);
    expect(retry.body.data.operation.operation_type).toBe('provision');
    expect((await waitForOperation(t, key, project.id, retry.body.data.operation.id)).status).toBe('completed');
  });
});

describe('deployment modes', () => {
  async function node(accountId: string, tags: string[] = []) {
    return new ConnectedNodes(t.platform.conn).register(accountId, 'edge-1', tags);
  }

  it('places a site on an own connected node with manual placement and <key>:<value> tags', async () => {
    const { key, accountId } = await t.createKey({ plan: 'free' });
    const n = await node(accountId, ['region:eu']);
    const res = await t.rest('POST', `${PREFIX}/sites`, {
      key,
      body: {
        name: 'On Node',
        deployment_mode: 'connected_node',
        target_node_id: n._id,
        placement_mode: 'manual',
        node_selector_tags: ['region:eu', 'tier:gold'],
      },
    });
    expect(res.status).toBe(202);
    // No agent runs for this node: its provisioning waits for it (node-agent.test.ts runs one).
    const meta = await t.rest('GET', projectPath(res.body.data.project.id, '/metadata'), { key });
    expect(meta.body.data.node).toEqual({ id: n._id, status: 'unreachable' });
    expect(meta.body.data.installation).toMatchObject({
      deployment_mode: 'connected_node',
      target_node_id: n._id,
      placement_mode: 'manual',
      node_selector_tags: ['region:eu', 'tier:gold'],
    });
    // Connected-node sites take no hosted slot: the free plan's one hosted site is still available.
    expect((await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Hosted' } })).status).toBe(202);
  });

  it('rejects an unknown node, another account’s node (422), bad tags and a bad placement mode (400)', async () => {
    const { key } = await t.createKey();
    const other = await t.createKey();
    const foreign = await node(other.accountId);
    const body = (extra: Record<string, unknown>) => ({ name: 'N', deployment_mode: 'connected_node', ...extra });
    // A node of nobody or of another account is a well-formed reference to nothing: 422.
    const cases: Array<[Record<string, unknown>, number, string]> = [
      [{ target_node_id: '00000000-0000-4000-8000-000000000000' }, 422, 'unknown_target_node'],
      [{ target_node_id: foreign._id }, 422, 'unknown_target_node'],
      // Shapes the row's schema (and the OpenAPI document) refuse: field errors.
      [{}, 400, 'invalid_request'],
      [{ target_node_id: foreign._id, placement_mode: 'auto' }, 400, 'invalid_request'],
      [{ target_node_id: foreign._id, node_selector_tags: ['no-colon'] }, 400, 'invalid_request'],
    ];
    for (const [extra, status, code] of cases) {
      const res = await t.rest('POST', `${PREFIX}/sites`, { key, body: body(extra) });
      expect([res.status, res.body.error.code]).toEqual([status, code]);
    }
    const hostedWithNode = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'H', target_node_id: foreign._id } });
    expect([hostedWithNode.status, hostedWithNode.body.error.code]).toEqual([400, 'invalid_request']);
  });
});

describe('plans, permissions and the feature flag', () => {
  it('gives the free plan one hosted site, then 402 plan_limit_reached', async () => {
    const { key } = await t.createKey({ plan: 'free' });
    await runningSite(t, key);
    const second = await t.rest('POST', `${PREFIX}/sites`, { key, body: { name: 'Second' } });
    expect(second.status).toBe(402);
    expect(second.body.error).toMatchObject({ code: 'plan_limit_reached', details: { plan: 'free', limit: 1 } });
  });

  it('lets a read-only key read every view but write nothing (403 read_only_key)', async () => {
    const owner = await t.createKey();
    const projectId = await runningSite(t, owner.key);
    const ro = await t.createKey({ account: owner.account, role: 'read_only' });
    for (const suffix of ['/metadata', '/history', '/recovery-points', '/mail/sender', '/mail/provider']) {
      expect([suffix, (await t.rest('GET', projectPath(projectId, suffix), { key: ro.key })).status]).toEqual([suffix, 200]);
    }
    expect((await t.rest('GET', `${PREFIX}/runtime-options`, { key: ro.key })).status).toBe(200);
    const points = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key: owner.key, body: {} });
    await waitForOperation(t, owner.key, projectId, points.body.data.operation.id);
    const writes: Array<[string, string, unknown]> = [
      ['POST', `${PREFIX}/sites`, { name: 'Nope' }],
      ['POST', projectPath(projectId, '/actions'), { action: 'restart' }],
      ['POST', projectPath(projectId, '/domain'), { domain: 'example.com' }],
      ['POST', projectPath(projectId, '/recovery-points'), {}],
      ['POST', projectPath(projectId, `/recovery-points/${points.body.data.recovery_point.id}/restore`), undefined],
      ['POST', projectPath(projectId, '/staging'), {}],
      ['POST', projectPath(projectId, '/upgrades'), { target_version: '5.130.6' }],
      ['PUT', projectPath(projectId, '/mail/sender'), { sender_email: 'a@example.com' }],
      [
        'PUT',
        projectPath(projectId, '/mail/provider'),
        { domain: 'example.com', region: 'us', api_key: 'k-12345678', from_email: 'a@example.com' },
      ],
      ['DELETE', projectPath(projectId, '/mail/provider'), undefined],
    ];
    for (const [method, path, body] of writes) {
      const res = await t.rest(method, path, { key: ro.key, body });
      expect([path, res.status]).toEqual([path, 403]);
      expect(res.body).toEqual(errorBody('read_only_key'));
    }
  });

  it('answers 404 publisher_disabled on every route while the feature is off', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const op = (await t.rest('GET', projectPath(projectId, '/history'), { key })).body.data.latest_operation.id;
    t.platform.services.publisher.features.publisherEnabled = false;
    try {
      const routes: Array<[string, string, unknown]> = [
        ['GET', `${PREFIX}/runtime-options`, undefined],
        ['GET', projectPath(projectId, `/operations/${op}`), undefined],
        ['GET', projectPath(projectId, '/metadata'), undefined],
        ['GET', projectPath(projectId, '/history'), undefined],
        ['GET', projectPath(projectId, '/recovery-points'), undefined],
        ['GET', projectPath(projectId, '/mail/provider'), undefined],
        ['POST', `${PREFIX}/sites`, { name: 'Off' }],
        ['POST', projectPath(projectId, '/recovery-points'), {}],
        ['POST', projectPath(projectId, '/domain'), { domain: 'example.com' }],
      ];
      for (const [method, path, body] of routes) {
        const res = await t.rest(method, path, { key, body });
        expect([path, res.status]).toEqual([path, 404]);
        expect(res.body).toEqual(errorBody('publisher_disabled'));
      }
    } finally {
      t.platform.services.publisher.features.publisherEnabled = true;
    }
    expect((await t.rest('GET', `${PREFIX}/runtime-options`, { key })).status).toBe(200);
  });
});

describe('GraphQL', () => {
  it('serves the new queries and mutations in camelCase, with no secret field to select', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const created = await t.gql(
      'mutation($p: ID!) { createRecoveryPoint(projectId: $p, reason: "gql") { recoveryPoint { id status kind reason } operation { id operationType status } } }',
      { p: projectId },
      key,
    );
    expect(created.errors).toBeUndefined();
    expect(created.data.createRecoveryPoint).toMatchObject({
      recoveryPoint: { id: expect.stringMatching(UUID), status: 'pending', kind: 'manual', reason: 'gql' },
      operation: { operationType: 'recovery_point', status: 'pending' },
    });
    await waitForOperation(t, key, projectId, created.data.createRecoveryPoint.operation.id);
    const read = await t.gql(
      `query($p: ID!) {
        siteHistory(projectId: $p) { projectId activeOperation { id } latestOperation { operationType status } recoveryPoints { id status } }
        recoveryPoints(projectId: $p) { id runtimeVersion runtimeDigest database { status } }
        siteMailSettings(projectId: $p) { enabled newsletterProvider { configured hasApiKey } }
      }`,
      { p: projectId },
      key,
    );
    expect(read.errors).toBeUndefined();
    expect(read.data.siteHistory).toMatchObject({
      projectId,
      activeOperation: null,
      latestOperation: { operationType: 'recovery_point', status: 'completed' },
      recoveryPoints: [{ status: 'completed' }],
    });
    expect(read.data.recoveryPoints[0]).toMatchObject({
      runtimeVersion: '5.130.5',
      runtimeDigest: expect.stringMatching(/^sha512-/),
      database: { status: 'captured' },
    });
    const secret = await t.gql(
      'query($p: ID!) { siteMailSettings(projectId: $p) { newsletterProvider { apiKey } } }',
      { p: projectId },
      key,
    );
    expect(secret.errors?.[0]?.message).toMatch(/apiKey/);
    const rejected = await t.gql(
      'mutation($p: ID!) { setSiteDomain(projectId: $p, domain: "http://a.com") { name } }',
      { p: projectId },
      key,
    );
    expect(rejected.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_domain', status: 400 });
    // The input's rules are the service's: GraphQL meets the same error as REST (decision 0330).
    const tooLong = await t.gql(
      'mutation($n: String!) { createSite(input: { name: $n }) { siteUrl } }',
      { n: 'n'.repeat(MAX_SITE_NAME_LENGTH + 1) },
      key,
    );
    expect(tooLong.errors?.[0]?.extensions).toMatchObject({ code: 'invalid_name', status: 400 });
  });
});

describe('operationUpdated subscriptions', () => {
  it('sees every status change of a new recovery-point operation through to completed', async () => {
    const { key } = await t.createKey();
    const projectId = await runningSite(t, key);
    const client = createClient({
      url: t.routerUrl.replace(/^http/, 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${key}` },
      retryAttempts: 0,
    });
    const events: any[] = [];
    const unsubscribe = client.subscribe(
      {
        query: 'subscription($p: ID!) { operationUpdated(projectId: $p) { id status step operationType } }',
        variables: { p: projectId },
      },
      { next: (v) => void events.push((v.data as any).operationUpdated), error: () => undefined, complete: () => undefined },
    );
    try {
      await new Promise((r) => setTimeout(r, 300));
      const res = await t.rest('POST', projectPath(projectId, '/recovery-points'), { key, body: {} });
      const id = res.body.data.operation.id;
      const deadline = Date.now() + 20_000;
      while (!events.some((e) => e.id === id && e.status === 'completed')) {
        if (Date.now() > deadline) throw new Error('no completed event');
        await new Promise((r) => setTimeout(r, 25));
      }
      const seen = events.filter((e) => e.id === id).map((e) => `${e.status}:${e.step}`);
      expect(seen[0]).toBe('pending:queued');
      expect(seen).toContain('running:capture_content');
      expect(seen[seen.length - 1]).toBe('completed:completed');
    } finally {
      unsubscribe();
      await client.dispose();
    }
  });
});
