import { compositionInput } from '../../app/areas';
import { config } from '../../core/config';
import { writeComposedSchema } from '../../router/compose';

describe('committed schema/', () => {
  it('matches what `npm run compose` generates (subgraph SDLs, supergraph, subscriptions, OpenAPI)', async () => {
    const stale = await writeComposedSchema(await compositionInput(config().SUBGRAPH_BASE_PORT), true);
    expect(stale).toEqual([]);
  });
});
