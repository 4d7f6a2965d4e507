import 'reflect-metadata';
import { type ExecutionResult, execute, parse } from 'graphql';
import { GraphQLJSON } from 'graphql-scalars';
import {
  Arg,
  createUnionType,
  Directive,
  Field,
  FieldResolver,
  ID,
  InputType,
  Int,
  ObjectType,
  Query,
  registerEnumType,
  Resolver,
  Root,
} from 'type-graphql';
import { compiledExecution, executeDocument } from '../../core/compiled-execution';
import { badRequest } from '../../core/errors';
import { buildSubgraph, type BuiltSubgraph } from '../../core/subgraph-kit';

/**
 * Compiled execution against graphql-js on a subgraph built as the areas build theirs (type-graphql
 * classes, `buildSubgraph`, federation): same answer as JSON text, same errors, and the resolvers
 * given the same arguments, for the kinds of values and documents the areas use (decision 0345).
 */
enum Colour {
  Red = 'red',
  Blue = 'blue',
}
registerEnumType(Colour, { name: 'Colour' });

@InputType('ThingFilter')
class ThingFilter {
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => String, { nullable: true }) folder?: string | null;
  @Field(() => Int, { nullable: true, defaultValue: 7 }) size?: number | null;
  @Field(() => [String], { nullable: 'itemsAndList' }) tags?: (string | null)[] | null;
  @Field(() => GraphQLJSON, { nullable: true }) meta?: unknown;
  @Field(() => Colour, { nullable: true }) colour?: Colour | null;
}

@ObjectType('Thing')
@Directive('@key(fields: "id")')
class Thing {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => Date) at!: Date;
  @Field(() => Date, { nullable: true }) later!: Date | null;
  @Field(() => GraphQLJSON) data!: unknown;
  @Field(() => Colour) colour!: Colour;
  @Field(() => String) strict!: string;
  @Field(() => String, { nullable: true }) loose!: string | null;
}

@ObjectType('Other')
class Other {
  @Field(() => ID) id!: string;
  @Field(() => Int) count!: number;
}

const Either = createUnionType({
  name: 'Either',
  types: () => [Thing, Other] as const,
  resolveType: (v) => ('count' in v ? 'Other' : 'Thing'),
});

/** What each root field was given: arguments as JSON with `undefined` spelled out, and their keys. */
const given: string[] = [];
const seen = (args: unknown) =>
  given.push(
    JSON.stringify(args, (_k, v: unknown) => {
      if (v === undefined) return '<undefined>';
      if (v && typeof v === 'object' && !Array.isArray(v)) return Object.fromEntries(Object.entries(v).sort());
      return v;
    }),
  );

const thing = (i: number): Thing => ({
  id: `t${i}`,
  name: `thing ${i}`,
  at: new Date(Date.UTC(2024, 0, i + 1)),
  later: i % 2 ? null : new Date(Date.UTC(2025, 5, i + 1, 3, 4, 5, 6)),
  data: { i, nested: [i, null, 'x'] },
  colour: i % 2 ? Colour.Blue : Colour.Red,
  strict: `s${i}`,
  loose: null,
});

@Resolver(() => Thing)
class ThingResolver {
  @Query(() => [Thing])
  things(
    @Arg('filter', () => ThingFilter, { nullable: true }) filter?: ThingFilter,
    @Arg('limit', () => Int, { nullable: true, defaultValue: 2 }) limit?: number,
    @Arg('cursor', () => String, { nullable: true }) cursor?: string | null,
    @Arg('colours', () => [Colour], { nullable: true }) colours?: Colour[] | null,
  ): Thing[] {
    seen({ filter: filter === undefined ? undefined : { ...filter }, limit, cursor, colours });
    return Array.from({ length: limit ?? 0 }, (_, i) => thing(i));
  }

  @Query(() => [Either])
  either(): (Thing | Other)[] {
    return [thing(1), { id: 'o1', count: 3 }];
  }

  @Query(() => Thing, { nullable: true })
  failing(@Arg('code', () => String) code: string): Thing {
    throw badRequest(code, `refused: ${code}`);
  }

  @FieldResolver(() => String)
  strict(@Root() t: Thing): string {
    if (t.id === 't1') throw badRequest('strict_refused', 'no strict for t1');
    if (t.id === 't2') return null as unknown as string;
    return t.strict;
  }

  /** Values their scalar or enum cannot write: t2's date is invalid, its colour unknown, its count 1.5. */
  @FieldResolver(() => Date, { nullable: true })
  when(@Root() t: Thing): Date {
    return t.id === 't2' ? new Date(NaN) : t.at;
  }

  @FieldResolver(() => Colour, { nullable: true })
  shade(@Root() t: Thing): Colour {
    return t.id === 't2' ? ('green' as Colour) : t.colour;
  }

  @FieldResolver(() => Int, { nullable: true })
  count(@Root() t: Thing): number {
    return t.id === 't2' ? 1.5 : 1;
  }

  @FieldResolver(() => String, { nullable: true })
  loose(@Root() t: Thing): string | null {
    if (t.id === 't1') throw badRequest('loose_refused', 'no loose for t1');
    return t.loose;
  }
}

let built: BuiltSubgraph;
beforeAll(async () => {
  built = await buildSubgraph({
    name: 'parity',
    resolvers: [ThingResolver],
    orphanedTypes: [Other],
    createResolver: () => new ThingResolver(),
    fieldAccess: { 'Query.things': 'public', 'Query.either': 'public', 'Query.failing': 'public' },
    referenceResolvers: {
      Thing: { __resolveReference: (ref: { id: string }) => (ref.id === 'gone' ? null : thing(Number(ref.id.slice(1)))) },
    },
  });
  compiledExecution.enabled = true;
});

const errorsOf = (r: ExecutionResult) =>
  r.errors?.map((e) => ({
    message: e.message,
    path: e.path,
    locations: e.locations,
    code: (e.originalError as { code?: string } | undefined)?.code,
  }));

/** The answer and the arguments given, graphql-js first, then compiled (twice: compiled once, run again). */
async function both(source: string, variableValues?: Record<string, unknown>) {
  const document = parse(source);
  const contextValue = { principal: null, requestId: 'r' };
  given.length = 0;
  const reference = await execute({ schema: built.schema, document, variableValues, contextValue });
  const referenceGiven = given.splice(0);
  const before = { ...compiledExecution };
  const compiled = await executeDocument({ schema: built.schema, document, source, variableValues, contextValue });
  const compiledGiven = given.splice(0);
  const ran = compiledExecution.compiled > before.compiled ? 'jit' : 'graphql-js';
  const again = await executeDocument({ schema: built.schema, document, source, variableValues, contextValue });
  expect(JSON.stringify(again)).toBe(JSON.stringify(compiled));
  return { reference, compiled, referenceGiven, compiledGiven, ran };
}

/** Same answer, errors and arguments; `ran` says which way the compiled side had to run. */
async function expectSame(source: string, variableValues?: Record<string, unknown>, ran: 'jit' | 'graphql-js' = 'jit') {
  const r = await both(source, variableValues);
  expect(r.ran).toBe(ran);
  expect(JSON.stringify(r.compiled.data)).toBe(JSON.stringify(r.reference.data));
  expect(errorsOf(r.compiled)).toEqual(errorsOf(r.reference));
  expect(r.compiledGiven).toEqual(r.referenceGiven);
  return r;
}

const THINGS = `query Q($filter: ThingFilter, $limit: Int, $cursor: String, $colours: [Colour!]) {
  things(filter: $filter, limit: $limit, cursor: $cursor, colours: $colours) { id name at later data colour }
}`;

describe('compiled execution gives what graphql-js gives (decision 0345)', () => {
  it.each<[string, Record<string, unknown> | undefined]>([
    ['no variables', undefined],
    ['an empty variables object', {}],
    [
      'input fields given as undefined (the REST bridge leaves absent query values so)',
      {
        filter: { name: '', folder: undefined, size: undefined, tags: undefined, meta: undefined, colour: undefined },
        cursor: undefined,
      },
    ],
    ['input fields given as null', { filter: { name: null, folder: null, size: null, tags: null, meta: null, colour: null } }],
    ['a list with undefined and null items', { filter: { tags: ['a', undefined, null] } }],
    ['a single value for a list', { filter: { tags: 'one' }, colours: 'Blue' }],
    ['a JSON value holding undefined (the scalar reads it as it is)', { filter: { meta: { a: undefined, b: [undefined] } } }],
    ['top-level variables given as undefined and null', { limit: undefined, cursor: null, filter: undefined }],
    ['a top-level null for an argument with a default', { limit: null }],
    ['enum values', { colours: ['Red', 'Blue'], filter: { colour: 'Blue' } }],
  ])('with %s', async (_name, variables) => {
    await expectSame(THINGS, variables);
  });

  it('applies argument and input-field defaults as graphql-js does (inline arguments too)', async () => {
    await expectSame('{ things { id } }');
    await expectSame('{ things(filter: {}, limit: 1) { id } }');
    await expectSame('{ things(filter: { folder: null, tags: ["x", null] }, limit: 3, cursor: null) { id } }');
    await expectSame(
      'query Q($n: Int = 3) { things(limit: $n, filter: { name: $n2 }) { id } }'.replace(', filter: { name: $n2 }', ''),
    );
    // A variable written inside an input object and left out: graphql-js leaves the field out, jit
    // would give it null, so graphql-js runs it. Given (undefined is given: null), jit runs it.
    const inLiteral = 'query Q($c: String) { things(filter: { name: $c, folder: "f" }) { id } }';
    await expectSame(inLiteral, {}, 'graphql-js');
    await expectSame(inLiteral, { c: undefined });
    await expectSame(inLiteral, { c: 'x' });
    await expectSame('query Q($c: String = "d") { things(filter: { name: $c }) { id } }', {});
  });

  it('serializes dates, JSON and enums as graphql-js does, __typename included', async () => {
    const r = await expectSame('{ __typename things(limit: 3) { __typename id at later data colour } }');
    expect(r.compiled.data).toMatchObject({ things: [{ at: '2024-01-01T00:00:00.000Z', colour: 'Red' }, {}, {}] });
  });

  it('answers aliases, merged fields and introspection as graphql-js does', async () => {
    await expectSame('{ a: things(limit: 1) { id } b: things(limit: 2) { id name id data } b: things(limit: 2) { at } }');
    await expectSame('{ __type(name: "Thing") { name fields { name type { name kind ofType { name } } } } }');
  });

  // jit orders an answer's keys when it compiles: a field left out by a condition and selected
  // again later would come first. graphql-js runs documents with @skip or @include.
  it('leaves @skip and @include to graphql-js', async () => {
    const source = `query Q($s: Boolean!) {
      a: things(limit: 1) @skip(if: $s) { id }
      b: things(limit: 2) { id @include(if: $s) name id data }
    }`;
    await expectSame(source, { s: true }, 'graphql-js');
    await expectSame(source, { s: false }, 'graphql-js');
  });

  // type-graphql's resolveType is async, which jit does not await: graphql-js runs these.
  it('resolves a union with fragments and __typename', async () => {
    await expectSame('{ either { __typename ... on Thing { id name } ... on Other { id count } } }', undefined, 'graphql-js');
    await expectSame('fragment T on Thing { id colour } { either { ...T ... on Other { count } } }', undefined, 'graphql-js');
    await expectSame('fragment E on Query { either { __typename } } { ...E }', undefined, 'graphql-js');
  });

  it('words resolver errors, null propagation and their paths as graphql-js does', async () => {
    await expectSame('{ failing(code: "nope") { id } }');
    // t1's loose throws (nullable: null there); t1's strict throws and t2's is null (non-null: the
    // null reaches the root, and the list stops at its first error).
    const r = await expectSame('{ things(limit: 3) { id loose } }');
    expect(errorsOf(r.compiled)?.map((e) => [e.code, e.path])).toEqual([['loose_refused', ['things', 1, 'loose']]]);
    const strict = await expectSame('{ failing: things(limit: 3) { id strict } }');
    expect(strict.compiled.data).toBeNull();
    expect(errorsOf(strict.compiled)?.map((e) => e.path)).toEqual([['failing', 1, 'strict']]);
    const nulled = await expectSame('{ ok: things(limit: 1) { id } bad: things(limit: 3) { strict } }');
    expect(nulled.compiled.data).toBeNull();
  });

  it('words values a scalar or enum cannot write as graphql-js does', async () => {
    const r = await expectSame('{ things(limit: 3) { id when shade count } }');
    expect(errorsOf(r.compiled)?.map((e) => e.path)).toEqual([
      ['things', 2, 'when'],
      ['things', 2, 'shade'],
      ['things', 2, 'count'],
    ]);
  });

  it('words variable errors as graphql-js does (graphql-js answers them)', async () => {
    for (const variables of [
      { limit: 'many' },
      { filter: { unknown: 1 } },
      { filter: { unknown: undefined } },
      { colours: ['Green'] },
      { colours: ['Red', undefined] },
      { filter: { size: 1.5 } },
    ]) {
      const r = await expectSame(THINGS, variables, 'graphql-js');
      expect(r.compiled.errors?.length).toBe(1);
    }
  });

  it('answers federation queries: _service and _entities, a missing entity included', async () => {
    const service = await expectSame('{ _service { sdl } }');
    expect((service.compiled.data as { _service: { sdl: string } })._service.sdl).toContain('@key(fields: "id")');
    const representations = [
      { __typename: 'Thing', id: 't3' },
      { __typename: 'Thing', id: 'gone' },
      { __typename: 'Thing', id: 't2' },
    ];
    const entities = await expectSame(
      'query E($representations: [_Any!]!) { _entities(representations: $representations) { __typename ... on Thing { id at colour } } }',
      { representations },
    );
    expect(entities.compiled.data).toEqual({
      _entities: [{ __typename: 'Thing', id: 't3', at: '2024-01-04T00:00:00.000Z', colour: 'Blue' }, null, expect.anything()],
    });
    await expectSame(
      'query E($representations: [_Any!]!) { _entities(representations: $representations) { ... on Thing { id } } }',
      { representations: [{ __typename: 'Nothing', id: 'x' }] },
    );
  });
});
