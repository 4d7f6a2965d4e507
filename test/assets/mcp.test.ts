import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startTestPlatform, uniqueName, type TestPlatform } from '../support/platform';

/** The governed automation tools over MCP (decisions 0027, 0110), with the official SDK's own client. */
describe('assets MCP endpoint and automation', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startTestPlatform();
  });
  afterAll(async () => {
    await t.stop();
  });

  const connect = async (key?: string) => {
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${t.bridgeUrl}/api/v1/assets/mcp`), {
      requestInit: key ? { headers: { authorization: `Bearer ${key}` } } : {},
    });
    await client.connect(transport);
    return client;
  };

  const upload = async (key: string) => {
    const fd = new FormData();
    fd.append('key', uniqueName('doc'));
    fd.append('file', new Blob([Buffer.from('some words')]), 'notes.txt');
    const res = await fetch(`${t.bridgeUrl}/api/v1/assets/upload`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: fd,
    });
    expect(res.status).toBe(201);
    return ((await res.json()) as any).data as { id: string; key: string };
  };

  it('lists the governed tools with their scopes, answers read-only tools and audits every call', async () => {
    const { key } = await t.createKey();
    const asset = await upload(key);
    const client = await connect(key);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((x) => x.name).sort()).toEqual(['get', 'search', 'tag', 'transform']);
      const tag = tools.find((x) => x.name === 'tag')!;
      expect(tag.annotations?.readOnlyHint).toBe(false);
      expect(tag._meta).toMatchObject({ 'platform/scope': 'assets:write', 'platform/requires_approval': true });
      expect(tag.inputSchema.properties).toHaveProperty('asset_id');

      const got = await client.callTool({ name: 'get', arguments: { asset_id: asset.id } });
      expect(got.isError).toBeFalsy();
      expect(got.structuredContent).toMatchObject({ id: asset.id, key: asset.key });
      const found = await client.callTool({ name: 'search', arguments: { query: asset.key } });
      expect((found.structuredContent as any).assets.map((a: any) => a.id)).toEqual([asset.id]);
      const missing = await client.callTool({ name: 'get', arguments: { asset_id: '00000000-0000-4000-8000-000000000000' } });
      expect(missing.isError).toBe(true);
      expect((missing.structuredContent as any).error.code).toBe('assets.not_found');
    } finally {
      await client.close();
    }
    const auto = await t.rest('GET', '/api/v1/assets/automation', { key });
    expect(auto.status).toBe(200);
    expect(auto.body.data.mcp_url).toMatch(/\/api\/v1\/assets\/mcp$/);
    expect(auto.body.data.tools.find((x: any) => x.name === 'search')).toEqual({
      name: 'search',
      title: 'Search assets',
      description: expect.any(String),
      scope: 'assets:read',
      read_only: true,
      requires_approval: false,
    });
    expect(auto.body.data.audits.map((a: any) => [a.tool, a.outcome])).toEqual([
      ['get', 'failed'],
      ['search', 'allowed'],
      ['get', 'allowed'],
    ]);
    expect((await t.rest('GET', '/api/v1/assets/automation')).status).toBe(401);
  });

  it('refuses a tool outside the key scope, and a write tool waits for an approval before it acts', async () => {
    const owner = await t.createKey();
    const asset = await upload(owner.key);
    const narrow = await t.createKey({ account: owner.account, scopes: ['assets:read'] });
    const reader = await connect(narrow.key);
    try {
      expect((await reader.listTools()).tools).toHaveLength(4);
      const refused = await reader.callTool({ name: 'tag', arguments: { asset_id: asset.id, add: ['x'] } });
      expect(refused.isError).toBe(true);
      expect((refused.structuredContent as any).error).toMatchObject({
        code: 'insufficient_scope',
        details: { required_scope: 'assets:write' },
      });
      expect((await reader.callTool({ name: 'get', arguments: { asset_id: asset.id } })).isError).toBeFalsy();
    } finally {
      await reader.close();
    }

    const writer = await connect(owner.key);
    let approvalId: string;
    try {
      const asked = await writer.callTool({ name: 'tag', arguments: { asset_id: asset.id, add: ['agent-tagged'] } });
      expect(asked.isError).toBeFalsy();
      expect(asked.structuredContent).toMatchObject({ status: 'approval_required', action_key: 'assets.tag' });
      approvalId = (asked.structuredContent as any).approval_id;
    } finally {
      await writer.close();
    }
    // Nothing happened yet.
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key: owner.key })).body.data.tags).toEqual([]);
    const list = await t.rest('GET', '/api/v1/assets/workflows/approvals', { key: owner.key });
    const approval = list.body.data.items.find((a: any) => a.id === approvalId);
    expect(approval).toMatchObject({
      kind: 'automation_tool',
      status: 'pending',
      tool: { name: 'tag', args: { asset_id: asset.id, add: ['agent-tagged'], remove: [] }, scope: 'assets:write' },
    });
    // The key that asked never decides its own action (spec 5.5): it is not offered, and refused.
    expect(approval).toMatchObject({
      can_decide: false,
      decision_path: `/api/v1/assets/workflows/approvals/${approvalId}/decision`,
    });
    const self = await t.rest('POST', `/api/v1/assets/workflows/approvals/${approvalId}/approve`, {
      key: owner.key,
      body: { action_hash: approval.action_hash },
    });
    expect(self.status).toBe(403);
    expect(self.body.error.code).toBe('approval_self_decision');
    // Another owner key of the account decides, through the path the approval names.
    const second = await t.createKey({ account: owner.account });
    const seen = (await t.rest('GET', '/api/v1/assets/workflows/approvals', { key: second.key })).body.data.items;
    expect(seen.find((a: any) => a.id === approvalId).can_decide).toBe(true);
    const ok = await t.rest('POST', approval.decision_path, {
      key: second.key,
      body: { decision: 'approved', action_hash: approval.action_hash },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.data.operation_id).toEqual(expect.any(String));
    const end = Date.now() + 15_000;
    let tags: string[] = [];
    while (Date.now() < end) {
      tags = (await t.rest('GET', `/api/v1/assets/${asset.id}`, { key: owner.key })).body.data.tags;
      if (tags.length) break;
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(tags).toEqual(['agent-tagged']);
    const op = await t.platform.engine.get(ok.body.data.operation_id);
    expect(op).toMatchObject({ operationType: 'assets.automation_action', resourceId: approvalId });

    const audits = (await t.rest('GET', '/api/v1/assets/automation', { key: owner.key })).body.data.audits;
    expect(audits.map((a: any) => [a.tool, a.outcome, a.key_id === null])).toEqual([
      ['tag', 'approval_required', false],
      ['get', 'allowed', false],
      ['tag', 'refused', false],
    ]);
    expect(audits[2].error_code).toBe('insufficient_scope');
  });

  it('a member key cannot approve the action it asked for, nor any other; an owner decides on the decision path', async () => {
    const owner = await t.createKey();
    const asset = await upload(owner.key);
    const member = await t.createKey({ account: owner.account, role: 'member' });
    const agent = await connect(member.key);
    let approvalId: string;
    let decisionPath: string;
    try {
      const asked = await agent.callTool({ name: 'tag', arguments: { asset_id: asset.id, add: ['self-approved'] } });
      expect(asked.structuredContent).toMatchObject({ status: 'approval_required' });
      approvalId = (asked.structuredContent as any).approval_id;
      decisionPath = (asked.structuredContent as any).decision_path;
    } finally {
      await agent.close();
    }
    const hash = async (key: string) =>
      (await t.rest('GET', '/api/v1/assets/workflows/approvals', { key })).body.data.items.find((a: any) => a.id === approvalId);
    const asMember = await hash(member.key);
    expect(asMember.can_decide).toBe(false);
    for (const [path, body] of [
      [`/api/v1/assets/workflows/approvals/${approvalId}/approve`, { action_hash: asMember.action_hash }],
      [decisionPath, { decision: 'approved', action_hash: asMember.action_hash }],
    ] as const) {
      const r = await t.rest('POST', path, { key: member.key, body });
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe('approval_self_decision');
    }
    // Through GraphQL too.
    const g = await t.gql(
      'mutation($id: ID!) { decideAssetApproval(id: $id, decision: "approved") { id status } }',
      { id: approvalId },
      member.key,
    );
    expect(g.errors?.[0]?.extensions?.code).toBe('approval_self_decision');
    // Another member (not the requester) is still not an owner.
    const other = await t.createKey({ account: owner.account, role: 'member' });
    const byOther = await t.rest('POST', decisionPath, { key: other.key, body: { decision: 'approved' } });
    expect(byOther.status).toBe(403);
    expect(byOther.body.error.code).toBe('approval_not_permitted');
    expect((await hash(other.key)).can_decide).toBe(false);
    // The owner: offered, and the decision path answers (a denial here).
    expect((await hash(owner.key)).can_decide).toBe(true);
    const denied = await t.rest('POST', decisionPath, {
      key: owner.key,
      body: { decision: 'denied', action_hash: asMember.action_hash },
    });
    expect(denied.status).toBe(200);
    expect(denied.body.data).toMatchObject({ id: approvalId, status: 'rejected' });
    expect((await t.rest('GET', `/api/v1/assets/${asset.id}`, { key: owner.key })).body.data.tags).toEqual([]);
  });

  it('refuses a missing or wrong key; answers 405 to MCP GET (no stream), 404 to a DELETE naming a session (none exist), and 404 to others on that path', async () => {
    const noKey = await fetch(`${t.bridgeUrl}/api/v1/assets/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(noKey.status).toBe(401);
    expect(noKey.headers.get('www-authenticate')).toBe('Bearer');
    await expect(connect('not-a-key')).rejects.toThrow();
    const { key } = await t.createKey();
    const get = await fetch(`${t.bridgeUrl}/api/v1/assets/mcp`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    const del = await fetch(`${t.bridgeUrl}/api/v1/assets/mcp`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}`, 'mcp-session-id': 'any' },
    });
    expect(del.status).toBe(404);
    expect(await del.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: 'Session not found' }, id: null });
    // Not MCP's requests: the path reads as an asset id that names no asset.
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${t.bridgeUrl}/api/v1/assets/mcp`, { method, headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({ success: false, error: { code: 'assets.not_found' } });
    }
  });

  it('refuses a foreign Origin with 403 before anything else, and serves its own origin and none', async () => {
    const { key } = await t.createKey();
    const baseUrl = t.platform.config.baseUrl;
    const call = (origin?: string, method = 'POST') =>
      fetch(`${t.bridgeUrl}/api/v1/assets/mcp`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: method === 'GET' ? 'text/event-stream' : 'application/json, text/event-stream',
          ...(method === 'DELETE' ? { 'mcp-session-id': 'any' } : {}),
          ...(origin === undefined ? {} : { origin }),
        },
        body: method === 'POST' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) : undefined,
      });
    for (const origin of [
      'https://evil.example',
      'null',
      'not a url',
      new URL(baseUrl).origin.replace(/:(\d+)$/, (_, p) => `:${Number(p) + 1}`),
    ]) {
      for (const method of ['POST', 'GET', 'DELETE']) {
        const res = await call(origin, method);
        expect([origin, method, res.status]).toEqual([origin, method, 403]);
        expect(await res.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
      }
    }
    // Refused before the key is looked at: a foreign page learns nothing about the key either.
    const noKey = await fetch(`${t.bridgeUrl}/api/v1/assets/mcp`, {
      method: 'POST',
      headers: { origin: 'https://evil.example' },
    });
    expect(noKey.status).toBe(403);
    for (const origin of [undefined, new URL(baseUrl).origin]) {
      const res = await call(origin);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
    }
  });

  it('a stock SDK client: initialize, list tools, call one, and an undeclared argument is refused as a tool error', async () => {
    const owner = await t.createKey();
    const asset = await upload(owner.key);
    const client = await connect(owner.key);
    try {
      // Nothing can change the tool list, so no list-change notifications are advertised.
      expect(client.getServerCapabilities()).toEqual({ tools: {} });
      expect(client.getServerVersion()).toEqual({ name: 'platform-assets', version: '1.0.0' });
      const { tools } = await client.listTools();
      for (const tool of tools) expect(tool.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
      const got = await client.callTool({ name: 'get', arguments: { asset_id: asset.id } });
      expect(got.isError).toBeFalsy();
      expect(got.structuredContent).toMatchObject({ id: asset.id });

      const extra = await client.callTool({ name: 'get', arguments: { asset_id: asset.id, include_secrets: true } });
      expect(extra.isError).toBe(true);
      expect((extra.structuredContent as any).error).toMatchObject({
        code: 'invalid_arguments',
        message: expect.stringContaining('include_secrets'),
      });
      // A write tool with an undeclared key records no approval.
      const tagged = await client.callTool({ name: 'tag', arguments: { asset_id: asset.id, add: ['x'], force: true } });
      expect(tagged.isError).toBe(true);
      expect((tagged.structuredContent as any).error.code).toBe('invalid_arguments');
      const wrongType = await client.callTool({ name: 'search', arguments: { limit: 'ten' } });
      expect((wrongType.structuredContent as any).error).toMatchObject({
        code: 'invalid_arguments',
        details: { issues: [{ path: 'limit' }] },
      });
      // An unknown tool is a protocol error (JSON-RPC invalid params).
      await expect(client.callTool({ name: 'nope', arguments: {} })).rejects.toMatchObject({ code: -32602 });
    } finally {
      await client.close();
    }
    const approvals = await t.rest('GET', '/api/v1/assets/workflows/approvals', { key: owner.key });
    expect(approvals.body.data.items.filter((a: any) => a.tool?.name === 'tag')).toEqual([]);
  });
});
