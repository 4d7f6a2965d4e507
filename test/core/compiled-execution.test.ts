import { buildSchema, execute, parse } from 'graphql';
import { compiledExecution, executeDocument } from '../../core/compiled-execution';

const schema = buildSchema(`
  type Point { id: ID! kind: String! size: Float nested: Inner! }
  type Inner { status: String! }
  type Query { points(n: Int!): [Point!]! failing: Point! }
  type Mutation { touch(id: ID!): Point! }
`);
const point = (i: number) => ({ id: `p${i}`, kind: 'manual', size: i % 2 ? null : i * 1.5, nested: { status: 'captured' } });
const fields = schema.getQueryType()!.getFields();
fields.points.resolve = (_r, { n }) => Array.from({ length: n }, (_, i) => point(i));
fields.failing.resolve = () => {
  throw Object.assign(new Error('nope'), { code: 'site_not_found' });
};
const touched: string[] = [];
schema.getMutationType()!.getFields().touch.resolve = (_r, { id }) => (touched.push(id), point(0));

async function both(source: string, variableValues: Record<string, unknown> = {}) {
  const document = parse(source);
  const reference = await execute({ schema, document, variableValues, contextValue: {} });
  const compiled = await executeDocument({ schema, document, source, variableValues, contextValue: {} });
  return { reference, compiled };
}

const given = compiledExecution.enabled;
beforeAll(() => {
  compiledExecution.enabled = true;
});
afterAll(() => {
  compiledExecution.enabled = given;
});

describe('executeDocument (decision 0345)', () => {
  it('answers a query as graphql-js does, key order included', async () => {
    const { reference, compiled } = await both('query Q($n: Int!) { points(n: $n) { kind id size nested { status } } }', {
      n: 3,
    });
    expect(JSON.stringify(compiled)).toBe(JSON.stringify(reference));
  });

  it('keeps a resolver error as the original error, with its path', async () => {
    const { reference, compiled } = await both('{ failing { id } }');
    expect(compiled.data).toEqual(reference.data);
    expect(compiled.errors?.map((e) => [e.message, e.path, (e.originalError as { code?: string }).code])).toEqual([
      ['nope', ['failing'], 'site_not_found'],
    ]);
  });

  it('words a variable error as graphql-js does (graphql-js answers it; no resolver runs)', async () => {
    const { reference, compiled } = await both('query Q($n: Int!) { points(n: $n) { id } }', { n: 'many' });
    expect(compiled.data).toBeUndefined();
    expect(compiled.errors?.map((e) => e.message)).toEqual(reference.errors?.map((e) => e.message));
  });

  it('leaves a mutation to graphql-js, run once', async () => {
    touched.length = 0;
    const source = 'mutation { touch(id: "a") { id } }';
    const answer = await executeDocument({ schema, document: parse(source), source, contextValue: {} });
    expect(answer).toEqual({ data: { touch: { id: 'p0' } } });
    expect(touched).toEqual(['a']);
  });

  it('runs graphql-js when switched off', async () => {
    compiledExecution.enabled = false;
    const { reference, compiled } = await both('{ points(n: 2) { id } }');
    expect(compiled).toEqual(reference);
    compiledExecution.enabled = true;
  });
});
