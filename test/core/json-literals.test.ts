import { randomUUID } from 'node:crypto';
import {
  buildClientSchema,
  getIntrospectionQuery,
  getNamedType,
  type GraphQLArgument,
  type GraphQLInputType,
  isCompositeType,
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  type IntrospectionQuery,
} from 'graphql';
import { plainJson } from '../../core/subgraph-kit';
import { startTestPlatform, type TestPlatform } from '../support/platform';

/**
 * An inline object literal in a JSON-scalar argument (`mergeAssetMetadata(id: "x", metadata: {})`)
 * is an ordinary request: it must never be a 500, with or without a key. Every root field taking a
 * JSON argument is called, from the schema, so a new one is covered without edits.
 */
let t: TestPlatform;
beforeAll(async () => {
  t = await startTestPlatform({}, { workers: false });
}, 60_000);
afterAll(async () => t?.stop());

const JSON_SCALARS = new Set(['JSON', 'JSONObject']);

function literal(type: GraphQLInputType): string {
  if (isNonNullType(type)) return literal(type.ofType);
  if (isListType(type)) return '[]';
  if (isEnumType(type)) return type.getValues()[0].name;
  if (isInputObjectType(type)) {
    const fields = Object.values(type.getFields()).filter((f) => isNonNullType(f.type) && f.defaultValue === undefined);
    return `{ ${fields.map((f) => `${f.name}: ${literal(f.type)}`).join(', ')} }`;
  }
  switch (getNamedType(type).name) {
    case 'JSON':
    case 'JSONObject':
      return '{ a: { b: [1, "x"] } }';
    case 'Int':
    case 'Float':
      return '1';
    case 'Boolean':
      return 'true';
    default:
      return JSON.stringify(randomUUID());
  }
}

it('plainJson turns prototype-less objects into plain ones, keeping every key as an own property', () => {
  const raw = Object.assign(Object.create(null), { a: Object.assign(Object.create(null), { b: 1 }) });
  Object.defineProperty(raw, '__proto__', { value: { polluted: true }, enumerable: true });
  const plain = plainJson(raw) as Record<string, any>;
  expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
  expect(Object.getPrototypeOf(plain.a)).toBe(Object.prototype);
  expect(Object.keys(plain)).toEqual(['a', '__proto__']);
  expect(({} as any).polluted).toBeUndefined();
  expect((plain as any).polluted).toBeUndefined();
});

it('every root field with a JSON argument takes an inline object literal without a 500', async () => {
  const intro = await t.gql<IntrospectionQuery>(getIntrospectionQuery());
  const schema = buildClientSchema(intro.data!);
  const { key } = await t.createKey();
  const tried: string[] = [];
  const wrong: string[] = [];
  for (const [kind, type] of [
    ['query', schema.getQueryType()!],
    ['mutation', schema.getMutationType()!],
  ] as const) {
    for (const field of Object.values(type.getFields())) {
      const takesJson = (a: GraphQLArgument) => JSON_SCALARS.has(getNamedType(a.type).name);
      if (!field.args.some(takesJson)) continue;
      // The JSON argument inline, optional or not; every other required argument inline too.
      const args = field.args.filter((a) => takesJson(a) || (isNonNullType(a.type) && a.defaultValue === undefined));
      const selection = isCompositeType(getNamedType(field.type)) ? ' { __typename }' : '';
      const query = `${kind} { ${field.name}(${args.map((a) => `${a.name}: ${literal(a.type)}`).join(', ')})${selection} }`;
      tried.push(field.name);
      // The same request with the JSON arguments as variables: what the inline literal must also get.
      const jsonArgs = args.filter(takesJson);
      const viaVariables = `${kind}(${jsonArgs.map((a, i) => `$j${i}: ${a.type.toString()}`).join(', ')}) { ${field.name}(${args
        .map((a) => `${a.name}: ${takesJson(a) ? `$j${jsonArgs.indexOf(a)}` : literal(a.type)}`)
        .join(', ')})${selection} }`;
      const variables = Object.fromEntries(jsonArgs.map((_, i) => [`j${i}`, { a: { b: [1, 'x'] } }]));
      const expected = await t.gql(viaVariables, variables, key);
      const inline = await t.gql(query, {}, key);
      const answer = (r: typeof inline) => [r.status, r.errors?.[0]?.extensions?.code ?? 'ok'];
      if (JSON.stringify(answer(inline)) !== JSON.stringify(answer(expected))) {
        wrong.push(`${field.name}: inline ${JSON.stringify(answer(inline))}, as variables ${JSON.stringify(answer(expected))}`);
      }
      for (const k of [undefined, key]) {
        const res = await t.gql(query, {}, k);
        const status = res.errors?.[0]?.extensions?.status;
        if (res.status >= 500 || status === 500 || status === undefined) {
          if (res.errors) wrong.push(`${field.name} ${k ? 'with' : 'without'} a key: ${JSON.stringify(res.errors[0])}`);
        }
        if (!k && status !== 401) wrong.push(`${field.name} without a key: ${JSON.stringify(res.errors?.[0] ?? res.data)}`);
      }
    }
  }
  expect(tried).toEqual(
    expect.arrayContaining([
      'mergeAssetMetadata',
      'createAssetTransformation',
      'transformAsset',
      'createAssetWorkflow',
      'saveAssetWorkflowDraft',
      'commercePutStorefrontSettings',
    ]),
  );
  expect(wrong).toEqual([]);
}, 120_000);

it('a JSON value with a NUL character in a key is a 400 on REST and bad input on GraphQL, never a 500', async () => {
  const { key } = await t.createKey();
  const nul = { rules: { 'a\u0000b': 1 } };
  const rest = await t.rest('POST', '/api/v1/assets/buckets', {
    key,
    body: { name: `nul-${Date.now()}`, lifecycle_policy: nul },
  });
  expect(rest.status).toBe(400);
  const gql = await t.gql('mutation($m: JSONObject!) { mergeAssetMetadata(id: "x", metadata: $m) { id } }', { m: nul }, key);
  expect(gql.status).toBeLessThan(500);
  expect(gql.errors?.[0]?.extensions?.code).toBe('forbidden_json_key');
  expect(JSON.stringify(gql.errors)).toContain('NUL');
});
