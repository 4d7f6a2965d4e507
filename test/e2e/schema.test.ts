import { writeOpenApi } from '../../rest-bridge/openapi-file';
import { writeComposedSchema } from '../../router/compose';

describe('committed schema/', () => {
  it('matches what `npm run compose` generates (subgraph SDLs, supergraph, OpenAPI)', async () => {
    const stale = [...(await writeComposedSchema(true)), ...(await writeOpenApi(true))];
    expect(stale).toEqual([]);
  });
});
