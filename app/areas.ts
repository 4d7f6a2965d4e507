import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Connection } from 'mongoose';
import type { ActivitySource } from '../core/activity-source';
import type { AreaContext, AreaDefinition, FeedDefinition } from '../core/area';
import type { Config } from '../core/config';
import type { EventBus } from '../core/events/event-bus';
import { childLogger } from '../core/logger';
import type { OperationEngine } from '../core/operations/engine';
import { projectRoot } from '../core/paths';
import { Ports } from '../core/ports';
import type { ByteRoute } from '../core/rest-byte-route';
import type { AreaRoute } from '../core/rest-route';
import { parse } from 'graphql';
import { areaScopes } from '../core/scopes';
import { type BuiltSubgraph, buildSubgraph, type FieldAccess, rootFieldAccess } from '../core/subgraph-kit';
import type { CompositionInput } from '../router/compose';
import { AREAS } from '../subgraphs/registry';

/**
 * The area kit's composition side: everything that loops over `subgraphs/registry.ts`. The
 * platform, the CLI, schema composition and the bridge's route list all come through here, so an
 * area joins by being registered and nothing else.
 */

export type AnyArea = AreaDefinition<any, any, string>;
type Registry = typeof AREAS;
type ServicesOf<D> = D extends AreaDefinition<infer S, any, string> ? S : never;

/** Each registered area's services, by area name. */
export type AreaServices = { [K in keyof Registry]: ServicesOf<Registry[K]> };
export type AreaName = keyof Registry;

/** The registered areas in port order; a registry key that is not its area's name is a wiring error. */
export const areas = (): readonly AnyArea[] =>
  Object.entries(AREAS).map(([key, area]) => {
    if (area.name !== key) throw new Error(`subgraphs/registry.ts lists the ${area.name} area as "${key}"`);
    return area as AnyArea;
  });

export function findArea(name: string): AnyArea {
  const area = areas().find((a) => a.name === name);
  if (!area)
    throw new Error(
      `unknown area "${name}"; known: ${areas()
        .map((a) => a.name)
        .join(', ')}`,
    );
  return area;
}

/** The port a subgraph listens on: fixed by its registry entry, so adding an area shifts no other. */
export function subgraphPort(name: string, basePort: number): number {
  return basePort + findArea(name).portOffset;
}

export interface AreaDeps {
  config: Config;
  conn: Connection;
  bus: EventBus;
  engine: OperationEngine;
  topicPrefix: string;
}

export interface BuiltAreas {
  services: AreaServices;
  ports: Ports;
  contexts: Map<string, AreaContext<unknown>>;
}

/** Builds every area's services (in registry order) and wires the kernel ports they offer. */
export function buildAreas(deps: AreaDeps): BuiltAreas {
  const ports = new Ports();
  const services: Record<string, unknown> = {};
  const contexts = new Map<string, AreaContext<unknown>>();
  for (const area of areas()) {
    const parsed = area.config ? area.config.safeParse(deps.config.env) : { success: true as const, data: {} };
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
      throw new Error(`invalid configuration of the ${area.name} area: ${problems}`);
    }
    const ctx: AreaContext<unknown> = {
      area: area.name,
      config: deps.config,
      settings: parsed.data,
      conn: deps.conn,
      bus: deps.bus,
      engine: deps.engine,
      log: childLogger(area.name),
      topicPrefix: deps.topicPrefix,
      topic: (name) => `${deps.topicPrefix}.${area.name}.${name}`,
      ports,
    };
    contexts.set(area.name, ctx);
    services[area.name] = area.services(ctx);
  }
  for (const area of areas()) area.provides?.(services[area.name], ports);
  ports.provide('activitySources', activitySources());
  return { services: services as AreaServices, ports, contexts };
}

/** Every area's subgraph; `services` absent builds the schema alone (SDL and composition). */
export async function buildSubgraphs(services?: AreaServices, only?: (name: string) => boolean): Promise<BuiltSubgraph[]> {
  const chosen = areas().filter((a) => !only || only(a.name));
  return Promise.all(
    chosen.map((a) =>
      buildSubgraph({
        name: a.name,
        scopes: areaScopes(a.name),
        fieldAccess: routeFieldAccess(a),
        ...a.subgraph((services as Record<string, unknown> | undefined)?.[a.name]),
      }),
    ),
  );
}

/** The root fields (`Query.name` / `Mutation.name`) an operation document selects. */
function rootFieldsOf(document: string): string[] {
  const out: string[] = [];
  for (const d of parse(document).definitions) {
    if (d.kind !== 'OperationDefinition' || d.operation === 'subscription') continue;
    const op = d.operation === 'query' ? 'Query' : 'Mutation';
    for (const s of d.selectionSet.selections) if (s.kind === 'Field') out.push(`${op}.${s.name.value}`);
  }
  return out;
}

/** What an area's REST rows say about its root fields: a public row's fields are public, a row's scope is theirs. */
function routeFieldAccess(area: AnyArea): Record<string, FieldAccess> {
  const access: Record<string, FieldAccess> = {};
  for (const row of area.routes ?? []) {
    const rule: FieldAccess | undefined = row.public ? 'public' : row.scope ? { scope: row.scope } : undefined;
    if (!rule) continue;
    for (const field of rootFieldsOf(operationDocument(area.name, row.operation))) access[field] ??= rule;
  }
  return access;
}

/**
 * The scope a REST row needs: its own, else the one its root field declares (one rule for both
 * transports, documented in OpenAPI as `x-scope`). A row whose fields need only a key has none.
 */
function rowScope(
  def: Parameters<typeof rootFieldAccess>[0],
  row: { scope?: string; public?: boolean },
  document: string,
): string | undefined {
  if (row.scope || row.public) return row.scope;
  for (const field of rootFieldsOf(document)) {
    const [op, name] = field.split('.') as ['Query' | 'Mutation', string];
    const access = rootFieldAccess(def, op, name);
    if (typeof access === 'object') return access.scope;
  }
  return undefined;
}

export function areaFeeds(): FeedDefinition<unknown, Record<string, unknown>>[] {
  const byField = new Map<string, FeedDefinition<unknown, Record<string, unknown>>>();
  // A feed needs its own scope, else its area's read scope (the scope of the REST reads it mirrors).
  for (const area of areas()) {
    for (const feed of area.feeds ?? []) byField.set(feed.field, { ...feed, scope: feed.scope ?? areaScopes(area.name)?.read });
  }
  return [...byField.values()];
}

/**
 * Why a production start must be refused, one sentence each (empty: it may start): every outside
 * system a stand-in would play must be named by its variable (stand-ins never run in production),
 * and every secret shared with an outside system that has a development default must be set. The
 * platform's own keys are checked the same way by core/keys.ts.
 */
export function productionProblems(env: Record<string, string | undefined>): string[] {
  const problems: string[] = [];
  for (const area of areas()) {
    for (const standIn of area.standIns ?? []) {
      if (!env[standIn.env]) {
        problems.push(
          `${standIn.env} must be set when NODE_ENV=production (the ${standIn.name} stand-in never runs in production)`,
        );
      }
      for (const secret of standIn.secrets ?? []) {
        if (!env[secret]) {
          problems.push(`${secret} must be set when NODE_ENV=production (its development default is public)`);
        }
      }
    }
  }
  return problems;
}

export function activitySources(): ActivitySource[] {
  return areas().flatMap((a) => a.activitySources ?? []);
}

const KERNEL_FRAGMENTS = path.join(projectRoot(), 'core', 'operations', 'fragments.graphql');

/** Every area's REST rows, each bound to its area and its GraphQL document. */
export function areaRoutes(): AreaRoute[] {
  return areas().flatMap((area) => {
    const def = {
      name: area.name,
      scopes: areaScopes(area.name),
      fieldAccess: routeFieldAccess(area),
      ...area.subgraph(undefined),
    };
    return (area.routes ?? []).map((row) => {
      const document = operationDocument(area.name, row.operation);
      return { ...row, scope: rowScope(def, row, document), area: area.name, document };
    });
  });
}

/** Every area's byte routes: the OpenAPI descriptions of what its data planes serve on the bridge. */
export function areaByteRoutes(): ByteRoute[] {
  return areas().flatMap((area) => area.byteRoutes ?? []);
}

/**
 * An operation's document with the fragments it spreads appended: the area's `_fragments.graphql`
 * and the kernel's (the operation face).
 */
export function operationDocument(area: string, name: string): string {
  const dir = path.join(projectRoot(), 'subgraphs', area, 'operations');
  const text = readFileSync(path.join(dir, `${name}.graphql`), 'utf8');
  const fragments = new Map<string, string>();
  for (const file of [path.join(dir, '_fragments.graphql'), KERNEL_FRAGMENTS]) {
    if (existsSync(file)) for (const [n, f] of splitFragments(readFileSync(file, 'utf8'))) fragments.set(n, f);
  }
  const needed = new Set<string>();
  const visit = (src: string) => {
    for (const m of src.matchAll(/\.\.\.\s*([A-Za-z_]\w*)/g)) {
      if (!needed.has(m[1]) && fragments.has(m[1])) {
        needed.add(m[1]);
        visit(fragments.get(m[1])!);
      }
    }
  };
  visit(text);
  return [text, ...[...needed].map((n) => fragments.get(n)!)].join('\n');
}

function splitFragments(source: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const chunk of source.split(/(?=^fragment\s)/m)) {
    const m = /^fragment\s+(\w+)/.exec(chunk.trim());
    if (m) out.set(m[1], chunk.trim());
  }
  return out;
}

/** What `npm run compose` composes: every area's subgraph at its fixed port, feeds and REST rows. */
export async function compositionInput(basePort: number): Promise<CompositionInput> {
  const built = await buildSubgraphs();
  return {
    subgraphs: built.map((b) => ({ built: b, url: `http://127.0.0.1:${subgraphPort(b.name, basePort)}/graphql` })),
    feeds: areaFeeds(),
    routes: areaRoutes(),
    byteRoutes: areaByteRoutes(),
  };
}
