import { z } from 'zod';
import { zodToJsonSchema } from 'zod-to-json-schema';
import { queryInt } from './query-int';

describe('queryInt', () => {
  const q = z.object({ limit: queryInt(1, 100).optional() }).strict();
  it.each(['5', '05', '100', '1'])('reads %p', (v) => {
    expect(q.parse({ limit: v })).toEqual({ limit: Number(v) });
  });
  it.each(['0x10', ' 5', '5 ', '1e1', '', '5.0', '+5', '0', '101', '-1', '99999999999999999999', 'abc'])('refuses %p', (v) => {
    expect(q.safeParse({ limit: v }).success).toBe(false);
  });
  it('refuses a repeated parameter and leaves an absent one absent', () => {
    expect(q.safeParse({ limit: ['1', '2'] }).success).toBe(false);
    expect(q.parse({})).toEqual({});
  });
  it('is documented as a bounded integer', () => {
    const s = zodToJsonSchema(q, { target: 'openApi3' }) as { properties: Record<string, unknown> };
    expect(s.properties.limit).toEqual({ type: 'integer', minimum: 1, maximum: 100 });
  });
});
