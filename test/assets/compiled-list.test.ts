import { compiledExecution } from '../../core/compiled-execution';
import { AssetsService } from '../../subgraphs/assets/storage/service';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * The assets list through the REST bridge with compiled execution on (decision 0345): the bridge
 * hands the router its variables in-process, so a filter field the request left out arrives as a
 * property whose value is `undefined`. graphql-js leaves such a field out of the argument; the
 * compiled query made it `null`, and the service's `folder.replace` answered 500.
 */
describe('GET /api/v1/assets with compiled execution', () => {
  let t: TestPlatform;
  let key: string;
  const given = compiledExecution.enabled;
  const list = jest.spyOn(AssetsService.prototype, 'list');
  beforeAll(async () => {
    t = await startTestPlatform();
    ({ key } = await t.createKey());
  }, 120_000);
  afterAll(async () => {
    compiledExecution.enabled = given;
    list.mockRestore();
    await t?.stop();
  });

  /** The answer and the arguments the service was given, with compiled execution on or off. */
  const get = async (path: string, compiled: boolean) => {
    compiledExecution.enabled = compiled;
    list.mockClear();
    const ran = compiledExecution.compiled;
    const res = await t.rest('GET', path, { key });
    return { status: res.status, body: res.body, args: list.mock.calls.map((c) => c[1]), jit: compiledExecution.compiled > ran };
  };

  it.each([
    '/api/v1/assets?bucket=&checksum=&direction=asc&cursor=',
    '/api/v1/assets',
    '/api/v1/assets?folder=&prefix=docs/&limit=5',
  ])('answers %s as graphql-js does, the service given the same arguments', async (path) => {
    const compiled = await get(path, true);
    const reference = await get(path, false);
    expect(reference.status).toBe(200);
    expect(compiled.status).toBe(200);
    expect(compiled.jit).toBe(true);
    expect(compiled.body.data).toEqual({ assets: [], total: 0, next_cursor: '' });
    expect(compiled.args).toHaveLength(1);
    expect(compiled.args).toEqual(reference.args);
    expect(Object.keys(compiled.args[0].filter)).toEqual(Object.keys(reference.args[0].filter));
  });

  // A GraphQL caller may send the folder as null, whichever way the query runs.
  it.each([true, false])('lists with a null folder over GraphQL (compiled: %s)', async (compiled) => {
    compiledExecution.enabled = compiled;
    const res = await t.gql('{ assets(filter: { folder: null, prefix: "docs/" }) { total nextCursor } }', {}, key);
    expect(res.errors).toBeUndefined();
    expect(res.data).toEqual({ assets: { total: 0, nextCursor: '' } });
  });
});
