import { validate as validateOpenApi } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import fs from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { WEBHOOK_RECEIVER_PATH } from '../../subgraphs/commerce/service';
import { signWebhook } from '../../subgraphs/commerce/webhook-signature';
import { base, commerce, connectStorefront, tenant } from '../commerce/support';
import { form, PNG } from '../assets/harness';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * Stock third-party clients against the platform (pinned in package.json devDependencies): an
 * OpenAPI validator (@readme/openapi-parser) on the committed document, a JSON Schema validator
 * (ajv, draft 2020-12 as OpenAPI 3.1 uses) on live answers against the document's own response
 * schemas, and the Standard Webhooks reference library (standardwebhooks) against the commerce
 * area's hand-written signer and verifier.
 */
jest.setTimeout(180_000);

const SCHEMA = path.join(__dirname, '..', '..', 'schema', 'openapi.json');
const readDoc = () => JSON.parse(fs.readFileSync(SCHEMA, 'utf8'));

let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform();
});
afterAll(async () => {
  await t?.stop();
});

describe('OpenAPI validator (@readme/openapi-parser)', () => {
  it('finds schema/openapi.json a valid OpenAPI 3.1 document', async () => {
    const result = await validateOpenApi(readDoc());
    expect(result).toMatchObject({ valid: true, specification: 'OpenAPI' });
  });

  it('finds the served document the same as the committed one', async () => {
    const served = await fetch(`${t.bridgeUrl}/api/v1/openapi.json`);
    expect(served.status).toBe(200);
    expect(await served.json()).toEqual(readDoc());
  });
});

describe('live answers validate against the document (ajv, JSON Schema 2020-12)', () => {
  const doc = readDoc();
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, 'openapi.json');

  /** The document's schema of one answer: path template, method, status and media type. */
  const schemaOf = (template: string, method: string, status: number, mediaType = 'application/json') => {
    const response = doc.paths[template]?.[method]?.responses?.[String(status)];
    if (!response) throw new Error(`${method.toUpperCase()} ${template} documents no ${status}`);
    const schema = response.content?.[mediaType]?.schema;
    if (!schema) throw new Error(`${method.toUpperCase()} ${template} ${status} documents no ${mediaType} body`);
    return schema.$ref ? { $ref: `openapi.json${schema.$ref}` } : schema;
  };
  const expectConforms = async (res: Response, template: string, method: string) => {
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    const body = mediaType === 'application/json' ? await res.json() : await res.text();
    const check = ajv.compile(schemaOf(template, method, res.status, mediaType));
    expect({ answer: `${method} ${template} ${res.status}`, errors: check(body) ? null : check.errors }).toEqual({
      answer: `${method} ${template} ${res.status}`,
      errors: null,
    });
    return body;
  };
  const call = (method: string, url: string, init: RequestInit & { key?: string } = {}) =>
    fetch(`${t.bridgeUrl}${url}`, {
      ...init,
      method,
      headers: { ...(init.key ? { authorization: `Bearer ${init.key}` } : {}), ...(init.headers ?? {}) },
    });

  it('row routes: success and error envelopes, standard and commerce', async () => {
    const { key } = await t.createKey();
    await expectConforms(
      await call('GET', '/api/v1/publisher/runtime-options', { key }),
      '/api/v1/publisher/runtime-options',
      'get',
    );
    await expectConforms(await call('GET', '/api/v1/publisher/runtime-options'), '/api/v1/publisher/runtime-options', 'get');
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const C = '/api/v1/projects/{projectID}/commerce';
    await expectConforms(await call('GET', `${base(tn.projectId)}/releases`, { key: tn.key }), `${C}/releases`, 'get');
    const refused = await call('PUT', `${base(tn.projectId)}/environments/production`, {
      key: tn.key,
      headers: { 'content-type': 'application/json' },
      body: '{"app_url":',
    });
    const body = (await expectConforms(refused, `${C}/environments/{environment}`, 'put')) as any;
    expect(body.error.code).toBe('COMMERCE_INVALID_CONFIGURATION');
    await expectConforms(await call('GET', `${base(tn.projectId)}/releases`), `${C}/releases`, 'get');
  });

  it('byte routes: multipart upload, signed session part, webhooks, health and a path parameter too long', async () => {
    const { key } = await t.createKey();
    const upload = await call('POST', '/api/v1/assets/upload', { key, body: form(PNG, 'p.png', { key: 'third-party/p.png' }) });
    expect(upload.status).toBe(201);
    await expectConforms(upload, '/api/v1/assets/upload', 'post');
    const part = await call('PUT', '/api/v1/assets/uploads/not-a-capability/parts/1', { body: 'bytes' });
    expect(part.status).toBe(404);
    await expectConforms(part, '/api/v1/assets/uploads/{capability}/parts/{partNumber}', 'put');
    const unsigned = await call('POST', WEBHOOK_RECEIVER_PATH, { body: '{}' });
    expect(unsigned.status).toBe(401);
    await expectConforms(unsigned, WEBHOOK_RECEIVER_PATH, 'post');
    await expectConforms(await call('GET', '/healthz'), '/healthz', 'get');
    const long = await call('GET', `/api/v1/assets/migrations/${'x'.repeat(200)}/report`, { key });
    expect(long.status).toBe(414);
    await expectConforms(long, '/api/v1/assets/migrations/{migrationID}/report', 'get');
  });
});

describe('Standard Webhooks reference library (standardwebhooks)', () => {
  const raw = (shop: string, id: string) => JSON.stringify({ id, topic: 'orders/paid', shop_domain: shop });

  it("verifies the commerce stand-in's signatures (the area's own signer)", () => {
    const secret = commerce(t).webhookSecret;
    const ts = Math.floor(Date.now() / 1000);
    const body = raw('shop.example', 'msg-1');
    const headers = {
      'webhook-id': 'msg-1',
      'webhook-timestamp': String(ts),
      'webhook-signature': signWebhook(secret, 'msg-1', ts, body),
    };
    expect(new Webhook(secret).verify(body, headers)).toMatchObject({ id: 'msg-1' });
  });

  it('is accepted by the commerce receiver when it signs, with one signature or several', async () => {
    const tn = await tenant(t);
    await connectStorefront(t, tn);
    const wh = new Webhook(commerce(t).webhookSecret);
    const send = async (id: string, signature: (s: string) => string) => {
      const now = new Date();
      const body = raw(tn.store.store_domain, id);
      return fetch(`${t.bridgeUrl}${WEBHOOK_RECEIVER_PATH}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
          'webhook-signature': signature(wh.sign(id, now, body)),
        },
        body,
      });
    };
    const one = await send('stock-1', (s) => s);
    expect(one.status).toBe(200);
    expect(((await one.json()) as any).data).toEqual({ recorded: 1, duplicate: 0 });
    // Several signatures (a rotation in progress): any one that verifies is enough.
    const rotated = await send('stock-2', (s) => `v1,${Buffer.alloc(32).toString('base64')} ${s}`);
    expect(rotated.status).toBe(200);
    const forged = await send('stock-3', () => `v1,${Buffer.alloc(32).toString('base64')}`);
    expect(forged.status).toBe(401);
  });
});
