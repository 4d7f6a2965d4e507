import 'reflect-metadata';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse, validate } from 'graphql';
import { areaScopes } from '../../core/scopes';
import { buildSubgraph } from '../../core/subgraph-kit';
import area from '../../subgraphs/assets/index';

/** Every route's document is valid against the assets subgraph schema, and every document has a route. */
describe('assets operations', () => {
  const dir = path.join(__dirname, '../../subgraphs/assets/operations');
  const fragments = readFileSync(path.join(dir, '_fragments.graphql'), 'utf8');

  it('validates each document against the subgraph schema', async () => {
    const built = await buildSubgraph({ name: 'assets', scopes: areaScopes('assets'), ...area.subgraph(undefined as never) });
    const docs = readdirSync(dir).filter((f) => f.endsWith('.graphql') && !f.startsWith('_'));
    for (const f of docs) {
      const text = readFileSync(path.join(dir, f), 'utf8');
      // The fragments the document spreads, and those they spread in turn.
      const blocks = fragments.split(/\n(?=fragment )/);
      const used = new Set<string>();
      const spreads = (t: string) => [...t.matchAll(/\.\.\.(\w+)/g)].map((m) => m[1]);
      const pending = spreads(text);
      while (pending.length) {
        const u = pending.pop()!;
        if (used.has(u)) continue;
        used.add(u);
        const block = blocks.find((b) => b.startsWith(`fragment ${u} `));
        if (block) pending.push(...spreads(block));
      }
      const frag = blocks.filter((block) => [...used].some((u) => block.startsWith(`fragment ${u} `))).join('\n');
      const errors = validate(built.schema, parse(`${text}\n${frag}`));
      expect({ f, errors: errors.map((e) => e.message) }).toEqual({ f, errors: [] });
    }
    const names = new Set(docs.map((f) => f.replace(/\.graphql$/, '')));
    for (const r of area.routes ?? []) expect(names.has(r.operation)).toBe(true);
  });
});
