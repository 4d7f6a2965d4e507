import type { FastifyInstance } from 'fastify';
import type { AreaContext } from './area';
import { composeModules, defineModule } from './area-module';

/** The module kit (docs/decisions/0180-assets-modules.md): build order, constructor dependencies, hook order. */
describe('composeModules', () => {
  class Front {}
  class Counter {
    constructor(readonly front: Front) {}
  }
  class FrontResolver {
    constructor(
      readonly front: unknown,
      readonly all: unknown,
    ) {}
  }
  class CounterResolver extends FrontResolver {}
  const calls: string[] = [];
  const front = defineModule<{ front: Front }>({
    name: 'front',
    services: () => ({ front: new Front() }),
    resolvers: [FrontResolver],
    routes: [{ path: '/a' } as never],
    executors: () => ({ a: async () => 'a' }),
    http: {
      cdn: () => {
        calls.push('front routes');
      },
    },
  });
  const counter = defineModule<{ counter: Counter }, { front: Front }>({
    name: 'counter',
    services: (_ctx, { front }) => ({ counter: new Counter(front) }),
    resolvers: [CounterResolver],
    routes: [{ path: '/b' } as never],
    executors: () => ({ b: async () => 'b' }),
    http: {
      hooks: { cdn: () => void calls.push('counter hook') },
      cdn: () => {
        calls.push('counter routes');
      },
    },
  });
  const area = composeModules<{ front: Front; counter: Counter }>([front, counter], 'front');

  it('builds each module with the services of the modules before it', () => {
    const s = area.services({} as AreaContext<never>);
    expect(s.counter.front).toBe(s.front);
  });

  it('lists routes, resolvers and executors in module order; resolvers get the front service and all', () => {
    const s = area.services({} as AreaContext<never>);
    expect(area.routes?.map((r) => (r as unknown as { path: string }).path)).toEqual(['/a', '/b']);
    const sub = area.subgraph(s);
    expect(sub.resolvers).toEqual([FrontResolver, CounterResolver]);
    const r = sub.createResolver(CounterResolver) as CounterResolver;
    expect(r.front).toBe(s.front);
    expect(r.all).toBe(s);
    expect(Object.keys(area.executors!(s))).toEqual(['a', 'b']);
  });

  it("runs every module's hooks before any module's routes", async () => {
    calls.length = 0;
    await area.http!.cdn!({} as FastifyInstance, area.services({} as AreaContext<never>));
    expect(calls).toEqual(['counter hook', 'front routes', 'counter routes']);
  });

  it('gives the area only the listeners its modules serve (no CDN listener without CDN routes)', () => {
    expect(Object.keys(area.http ?? {})).toEqual(['cdn']);
    const plain = composeModules<{ front: Front }>([defineModule({ name: 'plain', resolvers: [FrontResolver] })], 'front');
    expect(plain.http).toEqual({});
  });
});
