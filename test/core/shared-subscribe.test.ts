import { buildSchema, parse, type ExecutionResult } from 'graphql';
import { sharedSubscribe } from '../../router/subscriptions';

/**
 * The router's subscriptions execute each event once per operation and variables, however many
 * subscribers share them (docs/areas/activity.md: the fan-out to a thousand subscribers of one project), and
 * still once per subscriber when their operations differ.
 */
describe('shared subscription execution', () => {
  function setup() {
    const schema = buildSchema('type Query { x: Int }\ntype Subscription { thing(key: String!): String }');
    let resolved = 0;
    const listeners = new Map<string, ((e: unknown) => void)[]>();
    const field = schema.getSubscriptionType()!.getFields().thing;
    field.subscribe = (_root, args: { key: string }) => {
      const queue: unknown[] = [];
      let wake: (() => void) | undefined;
      listeners.set(args.key, [...(listeners.get(args.key) ?? []), (e) => (queue.push(e), wake?.())]);
      const it: AsyncIterableIterator<unknown> = {
        [Symbol.asyncIterator]: () => it,
        async next() {
          while (queue.length === 0) await new Promise<void>((r) => (wake = r));
          return { value: queue.shift(), done: false };
        },
        async return() {
          return { value: undefined, done: true };
        },
      };
      return it;
    };
    field.resolve = (e: { text: string }) => {
      resolved++;
      return e.text;
    };
    const emit = (key: string, e: unknown) => listeners.get(key)?.forEach((l) => l(e));
    return { schema, emit, resolved: () => resolved };
  }

  it('runs one execution for every subscriber of the same operation and variables', async () => {
    const { schema, emit, resolved } = setup();
    const subscribe = sharedSubscribe();
    const document = () => parse('subscription($k: String!) { thing(key: $k) }'); // each client parses its own
    const subs = await Promise.all([1, 2, 3].map(() => subscribe({ schema, document: document(), variableValues: { k: 'a' } })));
    const other = await subscribe({ schema, document: parse('subscription { renamed: thing(key: "a") }') });
    const iterators = [...subs, other] as AsyncIterableIterator<ExecutionResult>[];
    const next = iterators.map((i) => i.next());
    emit('a', { text: 'hello' });
    const got = (await Promise.all(next)).map((r) => r.value);
    expect(got).toEqual([
      { data: { thing: 'hello' } },
      { data: { thing: 'hello' } },
      { data: { thing: 'hello' } },
      { data: { renamed: 'hello' } },
    ]);
    // Three subscribers of one operation share an execution; the aliased one runs its own.
    expect(resolved()).toBe(2);
    for (const i of iterators) expect(await i.return!()).toEqual({ value: undefined, done: true });
  });

  it('answers the errors of an operation that cannot subscribe instead of a stream', async () => {
    const { schema } = setup();
    const r = (await sharedSubscribe()({ schema, document: parse('subscription { thing }') })) as ExecutionResult;
    expect(r.errors?.[0].message).toMatch(/Argument "key"/);
  });
});
