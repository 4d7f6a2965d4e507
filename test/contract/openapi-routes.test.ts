import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { areaByteRoutes, areaRoutes, areas } from '../../app/areas';
import { childLogger } from '../../core/logger';
import { buildBridge } from '../../rest-bridge/server';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/** The committed contract (what the contract stage fuzzes). */
const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schema', 'openapi.json'), 'utf8'));

/**
 * `/a/:id/b`, `/a/:id|:assetID/b` (two routes naming one parameter differently) and `/a/{assetID}/b`
 * → `/a/{}/b`: parameter names differ between router and document.
 */
const shape = (p: string) => p.replace(/:\w+(?:\|:\w+)*|\{\w+\}/g, '{}');

/**
 * Every method and path the listener's router holds, read from Fastify's own route tree
 * (`printRoutes`), so a route added anywhere (a row, a data plane, the bridge itself) is seen.
 * HEAD is left out: Fastify adds it beside every GET.
 */
function servedRoutes(app: FastifyInstance): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    const full = (depth > 0 ? stack[depth - 1] : '') + m[2];
    stack[depth] = full;
    stack.length = depth + 1;
    for (const method of (m[3] ?? '').split(', ').filter(Boolean)) {
      if (method !== 'HEAD') out.push(`${method} ${shape(full)}`);
    }
  }
  return [...new Set(out)].sort();
}

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
}, 120_000);
afterAll(async () => {
  await t?.stop();
});

describe('the OpenAPI document has every route the bridge serves', () => {
  it('documents every method and path of the real bridge (rows, data planes, its own routes)', async () => {
    const services = t.platform.services as unknown as Record<string, unknown>;
    const planes = areas().flatMap((a) => {
      const plane = a.http?.bridge;
      return plane ? [(app: FastifyInstance) => plane(app, services[a.name])] : [];
    });
    const bridge = await buildBridge({
      executor: { execute: async () => ({ data: null }) as never },
      routes: areaRoutes(),
      dataPlanes: planes,
      byteRoutes: areaByteRoutes(),
      log: childLogger('openapi-routes-test'),
      ready: async () => ({}),
    });
    await bridge.ready();
    const served = servedRoutes(bridge);
    await bridge.close();

    const documented = new Set(
      Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${shape(p)}`),
      ),
    );
    // The walk sees the byte routes decision 0105 names (so it is not vacuous).
    for (const r of [
      'POST /api/v1/assets/upload',
      'PUT /api/v1/assets/{}/replace',
      'PUT /api/v1/assets/uploads/{}',
      'PUT /api/v1/assets/uploads/{}/parts/{}',
      'POST /api/v1/assets/workflow-hooks/{}',
      'POST /assets/widget',
      'GET /api/v1/assets/migrations/{}/report',
      'POST /api/v1/assets/mcp',
      'POST /api/v1/commerce/webhooks',
      'POST /api/v1/billing/webhooks/payments/{}',
      'GET /metrics',
    ]) {
      expect(served).toContain(r);
    }
    expect(served.filter((r) => !documented.has(r))).toEqual([]);
    // …and the document names nothing the bridge does not serve.
    expect([...documented].filter((r) => !served.includes(r)).sort()).toEqual([]);
  });

  it('describes the byte routes: media types, headers and answers', () => {
    const upload = doc.paths['/api/v1/assets/upload'].post;
    expect(Object.keys(upload.requestBody.content)).toEqual(['multipart/form-data']);
    expect(upload.requestBody.content['multipart/form-data'].schema.properties.file).toEqual(
      expect.objectContaining({ type: 'string', format: 'binary' }),
    );
    expect(upload.responses['201'].headers.ETag).toBeDefined();
    const part = doc.paths['/api/v1/assets/uploads/{capability}/parts/{partNumber}'].put;
    expect(part.parameters).toContainEqual(expect.objectContaining({ name: 'X-Content-SHA256', in: 'header' }));
    expect(part.security).toEqual([]);
    const report = doc.paths['/api/v1/assets/migrations/{migrationID}/report'].get;
    expect(Object.keys(report.responses['200'].content).sort()).toEqual(['application/json', 'text/csv']);
    for (const hook of [
      doc.paths['/api/v1/assets/workflow-hooks/{token}'].post,
      doc.paths['/api/v1/commerce/webhooks'].post,
      doc.paths['/api/v1/billing/webhooks/payments/{provider}'].post,
    ]) {
      const names = hook.parameters.filter((p: any) => p.in === 'header').map((p: any) => p.name);
      expect(names).toEqual(['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    }
    expect(doc.paths['/api/v1/commerce/webhooks'].post.responses['401'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/CommerceError',
    });
    expect(doc.paths['/assets/widget'].post.parameters).toContainEqual(
      expect.objectContaining({ name: 'X-Upload-Capability', in: 'header', required: true }),
    );
  });

  it('documents 414 on every operation with a path parameter and 431 on every operation', () => {
    for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
      for (const [m, o] of Object.entries(ops)) {
        expect([`${m} ${p}`, '431' in o.responses]).toEqual([`${m} ${p}`, true]);
        if (p.includes('{')) expect([`${m} ${p}`, '414' in o.responses]).toEqual([`${m} ${p}`, true]);
      }
    }
  });
});
