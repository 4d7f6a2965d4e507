import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { newArea, newRoute, routeFiles } from '../../cli/scaffold';
import { projectRoot } from '../../core/paths';

/**
 * The area kit's promise: an area made by `npm run new:area` composes, answers a query through the
 * router and a REST route through the bridge, with no edit outside its folder and the registry line.
 */
describe('npm run new:area', () => {
  const name = `zz${randomBytes(3).toString('hex')}`;
  const root = projectRoot();
  const registryFile = path.join(root, 'subgraphs', 'registry.ts');
  let registry: string;

  beforeAll(async () => {
    registry = await readFile(registryFile, 'utf8');
  });
  afterAll(async () => {
    await rm(path.join(root, 'subgraphs', name), { recursive: true, force: true });
    await writeFile(registryFile, registry);
  });

  it('writes an area that composes and serves through the router and the bridge', async () => {
    const written = await newArea(name);
    expect(written.filter((f) => !f.startsWith(`subgraphs/${name}/`))).toEqual(['subgraphs/registry.ts']);
    // Loaded only now, so the registry this test reads includes the new line (nothing above loads it).
    const run = async () => {
      const { compositionInput } = require('../../app/areas') as typeof import('../../app/areas');
      const { composeSupergraph } = require('../../router/compose') as typeof import('../../router/compose');
      const { startTestPlatform } = require('../support/platform') as typeof import('../support/platform');
      const { deploymentFiles } = require('../../app/deployment') as typeof import('../../app/deployment');

      // Deployment follows the registry line too (decision 0193): a container and a scrape target.
      const deploy = await deploymentFiles();
      expect(deploy['docker-compose.yml']).toContain(`command: ['start', 'subgraph', '${name}']`);
      expect(deploy['infra/observability/prometheus.yml']).toContain(`labels: { area: ${name} }`);

      {
        const { supergraphSdl, files } = composeSupergraph(await compositionInput(4101));
        expect(files[`${name}.graphql`]).toContain(`${name}Status`);
        const t = await startTestPlatform({}, { supergraphSdl });
        try {
          const { key, accountId } = await t.createKey();
          const gql = await t.gql(`{ ${name}Status { area accountId } }`, {}, key);
          expect(gql.data).toEqual({ [`${name}Status`]: { area: name, accountId } });
          const rest = await t.rest('GET', `/api/v1/${name}/status?note=hi`, { key });
          expect(rest.status).toBe(200);
          expect(rest.body).toEqual({ success: true, data: { area: name, account_id: accountId, note: 'hi' } });
          const anonymous = await t.rest('GET', `/api/v1/${name}/status`);
          expect(anonymous.status).toBe(401);
        } finally {
          await t.stop();
        }
      }
    };
    await run();
    expect(existsSync(path.join(root, 'subgraphs', name, 'index.ts'))).toBe(true);
  });
});

describe('npm run new:route', () => {
  it('writes a typed route row and its GraphQL document named for the path', () => {
    const { row, operation, document } = routeFiles('assets', 'PATCH', '/api/v1/assets/collections/{collectionID}');
    expect(operation).toBe('patch-assets-collections');
    expect(row).toContain("route({\n    method: 'PATCH',\n    path: '/api/v1/assets/collections/{collectionID}'");
    expect(row).toContain('body: z.object({}).strict()');
    expect(row).toContain("derive: { body: 'input', params: '.' },\n    select:");
    expect(document).toContain('mutation PatchAssetsCollections($collectionId: ID!)');
  });

  it('appends rows whose input is derived from the body, with nothing to import', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'new-route-'));
    try {
      const file = path.join(root, 'subgraphs', 'demo', 'routes.ts');
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(
        file,
        "import { type AnyRoute, route } from '../../core/rest-route';\n\nexport const demoRoutes: AnyRoute[] = [\n];\n",
      );
      await newRoute('demo', 'POST', '/api/v1/demo/things', root);
      await newRoute('demo', 'PATCH', '/api/v1/demo/things/{thingID}', root);
      const text = await readFile(file, 'utf8');
      expect(text.match(/derive: \{ body: 'input'/g)).toHaveLength(2);
      expect(text.match(/^import /gm)).toHaveLength(1);
      // A row without path parameters needs no mapping of its own.
      expect(text).toContain(
        "operation: 'post-demo-things',\n    body: z.object({}).strict(),\n    derive: { body: 'input' },\n    select:",
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
