import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ZodString } from 'zod';
import { areaRoutes } from '../../app/areas';
import { encodeCursor } from '../../core/cursors';
import { childLogger } from '../../core/logger';
import { buildBridge } from '../../rest-bridge/server';
import { uploadFieldsSchema } from '../../subgraphs/assets/uploads';

/**
 * A request outside the documented schema is refused by the one schema that documents it, before
 * any operation runs (docs/decisions/0295-one-declaration-per-body.md): the bridge alone, its
 * operations replaced by a recorder (no platform is started).
 */
let bridge: FastifyInstance;
let base: string;
const ran: string[] = [];
beforeAll(async () => {
  bridge = await buildBridge({
    executor: {
      execute: async (document) => {
        ran.push(document);
        return { data: {} };
      },
    },
    routes: areaRoutes(),
    log: childLogger('validated-once-test'),
    ready: async () => ({}),
  });
  base = await bridge.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await bridge?.close();
});

const ID = '00000000-0000-4000-8000-000000000000';

async function send(method: 'GET' | 'POST', url: string, body?: unknown) {
  ran.length = 0;
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { authorization: 'Bearer k', ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await res.json()) as { error?: { code?: string } };
  return { status: res.status, code: answer.error?.code, ran: ran.length };
}

describe('requests outside the documented schema are refused before any operation runs', () => {
  it('a repeated or non-integer limit on an event subscription history', async () => {
    const history = `/api/v1/buckets/${ID}/event-subscriptions/${ID}/history`;
    for (const q of ['limit=1&limit=2', 'limit=1.5', 'limit=1e1', 'limit=%201', 'limit=']) {
      expect([q, await send('GET', `${history}?${q}`)]).toEqual([q, { status: 400, code: 'invalid_request', ran: 0 }]);
    }
    expect((await send('GET', `${history}?limit=50`)).ran).toBe(1);
  });

  it('a cursor commerce never issued, on the releases and webhooks lists (422 in the commerce envelope)', async () => {
    const cursor = encodeCursor({ t: new Date(0).toISOString(), id: ID }, `releases:${ID}`);
    for (const list of ['releases', 'webhooks']) {
      const url = `/api/v1/projects/${ID}/commerce/${list}`;
      for (const bad of ['', ' ', 'abc', `${cursor}.extra`, `${cursor}=`, `x${cursor.slice(cursor.indexOf('.'))}x`]) {
        const q = `cursor=${encodeURIComponent(bad)}`;
        expect([list, bad, await send('GET', `${url}?${q}`)]).toEqual([
          list,
          bad,
          { status: 422, code: 'COMMERCE_INVALID_CONFIGURATION', ran: 0 },
        ]);
      }
      // The shape of a real cursor passes to the list, which checks its signature.
      expect((await send('GET', `${url}?cursor=${encodeURIComponent(cursor)}`)).ran).toBe(1);
    }
  });

  it('an action_hash over 128 characters on an approval decision', async () => {
    for (const word of ['approve', 'reject']) {
      const url = `/api/v1/assets/workflows/approvals/${ID}/${word}`;
      expect(await send('POST', url, { action_hash: 'a'.repeat(129) })).toEqual({ status: 400, code: 'invalid_request', ran: 0 });
      expect((await send('POST', url, { action_hash: 'a'.repeat(128) })).ran).toBe(1);
    }
  });
});

describe('byte routes are documented from the schema their data plane parses with', () => {
  const doc = JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'schema', 'openapi.json'), 'utf8'));

  it('the upload forms state every length the form parser enforces (metadata: 16 KiB)', () => {
    const forms: [string, string][] = [
      ['/api/v1/assets/upload', 'post'],
      ['/api/v1/assets/{assetID}/replace', 'put'],
      ['/assets/widget', 'post'],
    ];
    for (const [p, method] of forms) {
      const props = doc.paths[p][method].requestBody.content['multipart/form-data'].schema.properties;
      for (const [field, schema] of Object.entries(props as Record<string, { maxLength?: number }>)) {
        if (field === 'file') continue;
        const parsed = (uploadFieldsSchema.shape as Record<string, { unwrap(): unknown }>)[field].unwrap();
        const max = parsed instanceof ZodString ? parsed.maxLength : null;
        expect([p, field, schema.maxLength ?? null]).toEqual([p, field, max]);
      }
    }
  });
});
