import type { FastifyInstance } from 'fastify';
import type { ActivitySource } from './activity-source';
import type { AreaContext, AreaDefinition, BackgroundWorker, ConsumerDefinition, StandInDefinition } from './area';
import type { OperationExecutor } from './operations/engine';
import type { Ports } from './ports';
import type { ByteRoute } from './rest-byte-route';
import type { AnyRoute } from './rest-route';

type ResolverClass = new (...args: any[]) => object;

/**
 * A module: the area kit one level down (docs/decisions/0180-assets-modules.md). An area as large as
 * Assets is a list of modules (`subgraphs/<area>/modules.ts`, shaped like `subgraphs/registry.ts`);
 * `composeModules` turns the list into the hooks of one `defineArea`. A module has the hooks of an
 * area that belong to a concept, not those that belong to a process (name, port, settings, feeds, CLI).
 *
 * `S` is what the module's `services` builds; `D` is what it needs from the modules listed before it
 * (handed to its constructors, never patched in afterwards). Hooks receive the whole area's services.
 */
export interface ModuleDefinition<S extends object = object, D extends object = object, A extends object = S & D> {
  /** The module's name (its folder, for `npm run new:route AREA/MODULE`). */
  name: string;
  /** Builds the module's services from the area's context and the services of earlier modules. Starts nothing. */
  services?(ctx: AreaContext<any>, deps: D): S;
  /**
   * Type-graphql resolver classes; each is built as `new cls(services.<primary>, services)` where
   * `primary` is the area's front service (composeModules' second argument).
   */
  resolvers?: ResolverClass[];
  /** REST rows, in the order the OpenAPI document lists them. */
  routes?: AnyRoute[];
  /** OpenAPI descriptions of the module's `http.bridge` routes (what no row describes). */
  byteRoutes?: ByteRoute[];
  provides?(services: A, ports: Ports): void;
  executors?(services: A): Record<string, OperationExecutor>;
  consumers?(services: A, ctx: AreaContext<any>): ConsumerDefinition[];
  workers?(services: A, ctx: AreaContext<any>): BackgroundWorker[];
  standIns?: StandInDefinition[];
  activitySources?: ActivitySource<any>[];
  http?: {
    /**
     * Hooks on a listener that must see every module's routes (access logs, counters): run before
     * any module's `bridge`/`cdn` routes are registered.
     */
    hooks?: { bridge?(app: FastifyInstance, services: A): void; cdn?(app: FastifyInstance, services: A): void };
    bridge?(app: FastifyInstance, services: A): void | Promise<void>;
    cdn?(app: FastifyInstance, services: A): void | Promise<void>;
  };
}

/** Identity function that keeps a module's types (as `defineArea` does for an area). */
export function defineModule<S extends object = object, D extends object = object, A extends object = S & D>(
  def: ModuleDefinition<S, D, A>,
): ModuleDefinition<S, D, A> {
  return def;
}

type ComposedHooks<S> = Pick<
  AreaDefinition<S>,
  | 'services'
  | 'subgraph'
  | 'provides'
  | 'executors'
  | 'consumers'
  | 'workers'
  | 'routes'
  | 'byteRoutes'
  | 'standIns'
  | 'http'
  | 'activitySources'
>;

/**
 * The area hooks of a module list, in list order: services are built module by module (each gets the
 * services built before it), and every other hook is the modules' hooks one after another.
 */
export function composeModules<S extends object>(
  modules: readonly ModuleDefinition<any, any, any>[],
  primary: keyof S & string,
): ComposedHooks<S> {
  const all = <T>(pick: (m: ModuleDefinition<any, any, any>) => T[] | undefined): T[] => modules.flatMap((m) => pick(m) ?? []);
  const resolvers = all((m) => m.resolvers);
  if (resolvers.length === 0) throw new Error('composeModules: no module has resolvers');
  return {
    services(ctx) {
      const built: Record<string, unknown> = {};
      for (const m of modules) Object.assign(built, m.services?.(ctx, built) ?? {});
      return built as S;
    },
    subgraph: (s) => ({
      resolvers: resolvers as [ResolverClass, ...ResolverClass[]],
      createResolver: (cls) => new cls((s as Record<string, unknown> | undefined)?.[primary], s),
    }),
    provides(s, ports) {
      for (const m of modules) m.provides?.(s, ports);
    },
    executors: (s) => Object.assign({}, ...modules.map((m) => m.executors?.(s) ?? {})) as Record<string, OperationExecutor>,
    consumers: (s, ctx) => modules.flatMap((m) => m.consumers?.(s, ctx) ?? []),
    workers: (s, ctx) => modules.flatMap((m) => m.workers?.(s, ctx) ?? []),
    routes: all((m) => m.routes),
    byteRoutes: all((m) => m.byteRoutes),
    standIns: all((m) => m.standIns),
    activitySources: all((m) => m.activitySources),
    // Only the listeners some module serves: an area with no CDN routes gets no CDN listener.
    http: {
      ...(modules.some((m) => m.http?.hooks?.bridge || m.http?.bridge) && {
        bridge: async (app: FastifyInstance, s: S) => {
          for (const m of modules) m.http?.hooks?.bridge?.(app, s);
          for (const m of modules) await m.http?.bridge?.(app, s);
        },
      }),
      ...(modules.some((m) => m.http?.hooks?.cdn || m.http?.cdn) && {
        cdn: async (app: FastifyInstance, s: S) => {
          for (const m of modules) m.http?.hooks?.cdn?.(app, s);
          for (const m of modules) await m.http?.cdn?.(app, s);
        },
      }),
    },
  };
}
