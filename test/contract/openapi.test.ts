import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { route, type AreaRoute } from '../../core/rest-route';
import { buildOpenApi, errorStatuses } from '../../contract/openapi';

/** The committed contract: what `npm run compose` generates from every area's rows. */
const doc = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'schema', 'openapi.json'), 'utf8'));
const op = (p: string, m: string) => doc.paths[p][m];
const P = '/api/v1/publisher';
const C = '/api/v1/projects/{projectID}/commerce';

describe('precise schemas from the rows', () => {
  it('says what the service enforces: enums, formats, lengths, required fields, no unknown fields', () => {
    const create = op(`${P}/sites`, 'post').requestBody;
    expect(create.required).toBe(true);
    const [hosted, connected] = create.content['application/json'].schema.anyOf;
    expect(hosted).toMatchObject({ required: ['name'], additionalProperties: false });
    expect(hosted.properties.name).toEqual({ type: 'string', minLength: 1, maxLength: 63, pattern: '\\S' });
    expect(hosted.properties.runtime_version.enum).toEqual(expect.arrayContaining(['5.130.6']));
    expect(connected.required).toEqual(expect.arrayContaining(['deployment_mode', 'target_node_id']));
    expect(connected.properties.target_node_id).toMatchObject({ format: 'uuid' });
    const action = op(`${P}/projects/{projectID}/actions`, 'post').requestBody.content['application/json'].schema;
    expect(action).toMatchObject({ additionalProperties: false, required: ['action'] });
    expect(action.properties.action.enum).toEqual(['restart', 'start', 'stop', 'retry_provisioning', 'delete']);
    // A body whose fields are all optional may be left out.
    expect(op(`${P}/projects/{projectID}/recovery-points`, 'post').requestBody.required).toBe(false);
  });

  it('types path parameters (uuid, enums) and query parameters from the rows', () => {
    const params = op(`${P}/projects/{projectID}/operations/{operationID}`, 'get').parameters;
    expect(params).toEqual([
      { name: 'projectID', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
      { name: 'operationID', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
    ]);
    const env = op(`${C}/environments/{environment}`, 'put').parameters[1];
    expect(env.schema.enum).toEqual(['development', 'production', 'preview']);
    const releases = op(`${C}/releases`, 'get').parameters;
    expect(releases).toContainEqual(
      expect.objectContaining({
        name: 'limit',
        in: 'query',
        required: false,
        schema: expect.objectContaining({ type: 'integer', minimum: 1 }),
      }),
    );
  });

  it('answers every status a route can give, each with its area envelope', () => {
    const meta = op(`${P}/projects/{projectID}/metadata`, 'get').responses;
    expect(Object.keys(meta)).toEqual(['200', '401', '403', '404', '414', '429', '431', '503']);
    expect(meta['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/StandardSuccess' });
    expect(meta['404'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/StandardError' });
    const connect = op(`${C}/connect`, 'post').responses;
    expect(Object.keys(connect)).toEqual(expect.arrayContaining(['202', '402', '409', '413', '415', '422']));
    // A refused commerce body is COMMERCE_INVALID_CONFIGURATION's 422, never a 400.
    expect(Object.keys(connect)).not.toContain('400');
    expect(doc.components.schemas.CommerceError.properties.error.properties.code.pattern).toBe('^COMMERCE_[A-Z_]+$');
    expect(connect['422'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CommerceError' });
    expect(doc.components.schemas.CommerceError).toMatchObject({
      additionalProperties: false,
      required: ['success', 'status', 'status_code', 'message', 'data', 'error'],
    });
    expect(doc.components.schemas.StandardSuccess.required).toEqual(['success', 'data']);
  });

  it('derives default statuses from the row and widens them with its errors', () => {
    const row = (extra: Partial<AreaRoute>): AreaRoute => ({
      ...route({
        method: 'POST',
        path: '/api/v1/x/{thingID}',
        summary: 's',
        tag: 't',
        operation: 'o',
        variables: () => ({}),
        select: (d) => d,
        status: 200,
        envelope: 'standard',
      }),
      area: 'x',
      document: '',
      ...extra,
    });
    expect(errorStatuses(row({}))).toEqual([401, 403, 404, 429, 503]);
    expect(errorStatuses(row({ public: true }))).toEqual([404, 429, 503]);
    expect(errorStatuses(row({ body: z.object({ a: z.string() }).strict(), errors: [409] }))).toEqual([
      400, 401, 403, 404, 409, 413, 415, 429, 503,
    ]);
  });
});

describe('links from what creates to what uses it', () => {
  const links = op(`${P}/sites`, 'post').responses['202'].links;
  const targets = Object.values(links).map((l: any) => l.operationId);

  it('links create site to every publisher route its project and operation fill', () => {
    expect(targets).toEqual(
      expect.arrayContaining([
        'publisher.site-metadata',
        'publisher.site-history',
        'publisher.site-operation',
        'publisher.site-action',
        'publisher.recovery-points',
        'publisher.create-recovery-point',
        'publisher.create-staging',
        'publisher.upgrade-site',
        'publisher.set-domain',
        'publisher.mail-sender',
      ]),
    );
    expect(Object.values(links)).toContainEqual(
      expect.objectContaining({
        operationId: 'publisher.site-operation',
        parameters: { projectID: '$response.body#/data/project/id', operationID: '$response.body#/data/operation/id' },
      }),
    );
  });

  it('links the project across areas, but no other id', () => {
    expect(targets).toContain('commerce.commerce-connection');
    // The commerce operation route takes an operation id the publisher did not create.
    expect(targets).not.toContain('commerce.commerce-operation');
    const cp = op(`${P}/projects/{projectID}/recovery-points`, 'post').responses['202'].links;
    expect(Object.values(cp)).toContainEqual(
      expect.objectContaining({
        operationId: 'publisher.restore-recovery-point',
        parameters: { projectID: '$request.path.projectID', recoveryPointID: '$response.body#/data/recovery_point/id' },
      }),
    );
  });

  it('is built from the rows alone: the committed document is what the generator makes', () => {
    const rows: AreaRoute[] = [];
    expect(buildOpenApi(rows)).toMatchObject({ openapi: '3.1.0', paths: {} });
    expect(doc.openapi).toBe('3.1.0');
  });
});
