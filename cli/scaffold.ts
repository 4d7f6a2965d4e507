import { existsSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CliUsageError } from '../core/area';
import { paramName } from '../core/field-names';
import { projectRoot } from '../core/paths';
import { pathParams } from '../core/rest-route';

/**
 * `npm run new:area NAME` and `npm run new:route AREA[/MODULE] METHOD PATH`: write the files an area or a
 * route needs, in the shape every area follows (docs/decisions/0006-area-shape.md). The generated
 * area composes, answers one query through the router and one REST route through the bridge.
 */

const NAME = /^[a-z][a-z0-9]{1,30}$/;
const pascal = (s: string) => s.replace(/(^|[-_])([a-z0-9])/g, (_m, _d, c: string) => c.toUpperCase());
const camel = (s: string) => pascal(s).replace(/^./, (c) => c.toLowerCase());

/** The files of a new area, by path relative to the area's folder. */
export function areaFiles(name: string, portOffset: number): Record<string, string> {
  const P = pascal(name);
  const c = camel(name);
  return {
    'limits.ts': `/** The ${name} area's input limits, one constant each, with no imports (zod, class-validator and the service read them). */

/** Longest note, in characters. */
export const MAX_NOTE_LENGTH = 200;
`,
    'service.ts': `import { type Principal, requirePrincipal } from '../../core/principal';

/** What the ${name} area tells a caller about itself. */
export interface ${P}Status {
  area: string;
  accountId: string;
  note: string | null;
}

/** The ${name} area's rules. Resolvers and routes stay thin; everything the area decides lives here. */
export class ${P}Service {
  status(principal: Principal | null, note?: string | null): ${P}Status {
    const p = requirePrincipal(principal);
    return { area: '${name}', accountId: p.accountId, note: note ?? null };
  }
}
`,
    'types.ts': `import { IsOptional, IsString, MaxLength } from 'class-validator';
import { ArgsType, Field, ID, ObjectType } from 'type-graphql';
import { MAX_NOTE_LENGTH } from './limits';

@ObjectType('${P}Status')
export class ${P}StatusType {
  @Field(() => String) area!: string;
  @Field(() => ID) accountId!: string;
  @Field(() => String, { nullable: true }) note!: string | null;
}

@ArgsType()
export class ${P}StatusArgs {
  @Field(() => String, { nullable: true }) @IsOptional() @IsString() @MaxLength(MAX_NOTE_LENGTH) note?: string | null;
}
`,
    'resolvers.ts': `import { Args, Authorized, Ctx, Query, Resolver } from 'type-graphql';
import type { RequestContext } from '../../core/subgraph-kit';
import type { ${P}Service } from './service';
import { ${P}StatusArgs, ${P}StatusType } from './types';

@Resolver()
export class ${P}Resolver {
  constructor(private readonly ${c}: ${P}Service) {}

  // Any key of the account may read it: name the area's scopes in core/scopes.ts and put them here
  // (every root field declares its access, or the subgraph does not build).
  @Authorized()
  @Query(() => ${P}StatusType, { description: 'The ${name} area, as the caller sees it.' })
  ${c}Status(@Args() args: ${P}StatusArgs, @Ctx() ctx: RequestContext): ${P}StatusType {
    return this.${c}.status(ctx.principal, args.note);
  }
}
`,
    'routes.ts': `import { z } from 'zod';
import { type AnyRoute, route } from '../../core/rest-route';
import { MAX_NOTE_LENGTH } from './limits';

const PREFIX = '/api/v1/${name}';
const tag = '${P}';

/** Every REST route of the ${name} area, each onto one GraphQL operation in operations/. */
export const ${c}Routes: AnyRoute[] = [
  route({
    method: 'GET',
    path: \`\${PREFIX}/status\`,
    summary: 'The ${name} area, as the caller sees it',
    tag,
    operation: 'status',
    query: z.object({ note: z.string().max(MAX_NOTE_LENGTH).optional() }).strict(),
    variables: (r) => ({ note: r.query.note ?? null }),
    select: (d) => d.${c}Status,
    status: 200,
    envelope: 'standard',
  }),
];
`,
    'operations/status.graphql': `query ${P}Status($note: String) {
  ${c}Status(note: $note) {
    area
    account_id: accountId
    note
  }
}
`,
    'index.ts': `import { defineArea } from '../../core/area';
import { ${P}Resolver } from './resolvers';
import { ${c}Routes } from './routes';
import { ${P}Service } from './service';

/** The ${name} area. */
export default defineArea({
  name: '${name}',
  portOffset: ${portOffset},
  services: () => new ${P}Service(),
  subgraph: (s) => ({ resolvers: [${P}Resolver], createResolver: (cls) => new cls(s) }),
  routes: ${c}Routes,
});
`,
  };
}

/** Adds `import NAME from './NAME';` and the entry to subgraphs/registry.ts (the one line outside the folder). */
export function addToRegistry(registry: string, name: string): string {
  const id = camel(name);
  const importLine = `import ${id} from './${name}';\n`;
  const lastImport = registry.lastIndexOf('\nimport ');
  const afterImports = registry.indexOf('\n', lastImport + 1) + 1;
  const withImport = registry.slice(0, afterImports) + importLine + registry.slice(afterImports);
  return withImport.replace(/export const AREAS = \{([^}]*)\} as const;/, (_m, list: string) => {
    return `export const AREAS = { ${list.trim().replace(/,$/, '')}, ${id} } as const;`;
  });
}

/** The next free port offset: one past the largest any registered area holds. */
async function nextPortOffset(root: string): Promise<number> {
  const dir = path.join(root, 'subgraphs');
  let max = -1;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const index = path.join(dir, entry.name, 'index.ts');
    if (!existsSync(index)) continue;
    const m = /portOffset:\s*(\d+)/.exec(await readFile(index, 'utf8'));
    if (m) max = Math.max(max, Number(m[1]));
  }
  return max + 1;
}

export async function newArea(name: string, root = projectRoot()): Promise<string[]> {
  if (!NAME.test(name)) throw new CliUsageError('new:area takes a name of 2 to 31 lowercase letters and digits');
  const dir = path.join(root, 'subgraphs', name);
  if (existsSync(dir)) throw new CliUsageError(`subgraphs/${name} exists already`);
  const files = areaFiles(name, await nextPortOffset(root));
  const written: string[] = [];
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
    written.push(path.relative(root, file));
  }
  const registryFile = path.join(root, 'subgraphs', 'registry.ts');
  await writeFile(registryFile, addToRegistry(await readFile(registryFile, 'utf8'), name));
  written.push('subgraphs/registry.ts');
  return written;
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/** The row and the document of a new route, for the area to fill in. */
export function routeFiles(
  area: string,
  method: string,
  routePath: string,
): { row: string; operation: string; document: string } {
  const words = routePath
    .replace(/^\/api\/v1\//, '')
    .split('/')
    .filter((w) => w && !w.startsWith('{'));
  const operation = [method.toLowerCase(), ...words.slice(-2)].join('-').replace(/[^a-z0-9-]/g, '-');
  const field = camel(operation);
  const params = pathParams(routePath);
  const hasBody = method !== 'GET' && method !== 'DELETE';
  // The input is the body with its keys in camelCase and each path parameter a variable, derived
  // by rule (decisions 0295 and 0370).
  const derive = [...(hasBody ? ["body: 'input'"] : []), ...(params.length ? ["params: '.'"] : [])];
  const row = `  route({
    method: '${method}',
    path: '${routePath}',
    summary: 'TODO: what this route does, in one line',
    tag: '${pascal(area)}',
    operation: '${operation}',${hasBody ? '\n    body: z.object({}).strict(),' : ''}${
      derive.length ? `\n    derive: { ${derive.join(', ')} },` : ''
    }
    select: (d) => d.${field},
    status: ${method === 'POST' ? 201 : 200},
    envelope: 'standard',
  }),
`;
  const args = params.map((p) => `$${paramName(p)}: ID!`);
  const kind = method === 'GET' ? 'query' : 'mutation';
  const document = `${kind} ${pascal(operation)}${args.length ? `(${args.join(', ')})` : ''} {
  ${field}${params.length ? `(${params.map((p) => `${paramName(p)}: $${paramName(p)}`).join(', ')})` : ''} {
    id
  }
}
`;
  return { row, operation, document };
}

/**
 * Appends a row to an area's `routes.ts`, or with `AREA/MODULE` to that module's
 * (`subgraphs/<area>/<module>/routes.ts`, docs/decisions/0180-assets-modules.md); the document goes
 * where the area's documents are read (`subgraphs/<area>/operations/`).
 */
export async function newRoute(target: string, method: string, routePath: string, root = projectRoot()): Promise<string[]> {
  const [area, module, ...more] = target.split('/');
  if (!area || more.length > 0 || module === '') throw new CliUsageError('new:route takes AREA or AREA/MODULE');
  const dir = path.join(root, 'subgraphs', area);
  const routesFile = path.join(dir, ...(module ? [module] : []), 'routes.ts');
  if (!existsSync(routesFile)) throw new CliUsageError(`${path.relative(root, routesFile)} does not exist`);
  const upper = method.toUpperCase();
  if (!(METHODS as readonly string[]).includes(upper)) throw new CliUsageError(`new:route takes one of ${METHODS.join(', ')}`);
  if (!routePath.startsWith('/')) throw new CliUsageError('new:route takes a path starting with /, e.g. /api/v1/x/{id}');
  const { row, operation, document } = routeFiles(area, upper, routePath);
  const docFile = path.join(dir, 'operations', `${operation}.graphql`);
  if (existsSync(docFile)) throw new CliUsageError(`${path.relative(root, docFile)} exists already`);
  await mkdir(path.dirname(docFile), { recursive: true });
  await writeFile(docFile, document);
  const routes = await readFile(routesFile, 'utf8');
  const end = routes.lastIndexOf('];');
  await writeFile(routesFile, routes.slice(0, end) + row + routes.slice(end));
  return [path.relative(root, docFile), path.relative(root, routesFile)];
}
