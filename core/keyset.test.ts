import type { Model } from 'mongoose';
import { encodeCursor } from './cursors';
import { badRequest } from './errors';
import { findPage, keysetAfter, keysetPage, keysetSort } from './keyset';

interface Row {
  _id: string;
  createdAt: Date;
  [field: string]: unknown;
}

const keyset = { field: 'createdAt', binding: 'rows:acct-1' };
const t = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
/** Five rows, newest first by (createdAt, _id); two share a time, so `_id` breaks the tie. */
const ROWS: Row[] = [
  { _id: 'e', createdAt: t(5) },
  { _id: 'd', createdAt: t(4) },
  { _id: 'c2', createdAt: t(3) },
  { _id: 'c1', createdAt: t(3) },
  { _id: 'a', createdAt: t(1) },
];

/** The part of a mongoose model `findPage` uses, over ROWS, evaluating the keyset filter it builds. */
function fakeModel(rows: Row[], seen: Array<{ filter: Record<string, unknown>; projection: unknown }>): Model<Row> {
  const matches = (r: Row, f: Record<string, unknown>): boolean =>
    Object.entries(f).every(([k, v]) => {
      if (k === '$or') return (v as Record<string, unknown>[]).some((g) => matches(r, g));
      if (k === '$and') return (v as Record<string, unknown>[]).every((g) => matches(r, g));
      const value = r[k] as Date | string;
      if (v && typeof v === 'object' && '$lt' in v) return value < (v as { $lt: Date | string }).$lt;
      return v instanceof Date ? +v === +(value as Date) : value === v;
    });
  return {
    find(filter: Record<string, unknown>, projection: unknown) {
      seen.push({ filter, projection });
      let limit = Infinity;
      const q = {
        sort: () => q,
        limit: (n: number) => ((limit = n), q),
        lean: () => q,
        exec: async () => rows.filter((r) => matches(r, filter)).slice(0, limit),
      };
      return q;
    },
  } as unknown as Model<Row>;
}

describe('keyset paging', () => {
  it('sorts by the field then _id, newest first', () => {
    expect(keysetSort(keyset)).toEqual({ createdAt: -1, _id: -1 });
  });

  it('pages through every row once, ties broken by _id, the last page without a cursor', async () => {
    const seen: Array<{ filter: Record<string, unknown>; projection: unknown }> = [];
    const model = fakeModel(ROWS, seen);
    const ids: string[][] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof findPage<Row>>> = await findPage<Row>(
        model,
        { accountId: undefined },
        { ...keyset, limit: 2, cursor },
      );
      ids.push(page.items.map((r) => r._id));
      expect(page.hasMore).toBe(page.nextCursor !== null);
      cursor = page.nextCursor;
    } while (cursor);
    expect(ids).toEqual([['e', 'd'], ['c2', 'c1'], ['a']]);
    expect(seen).toHaveLength(3);
  });

  it('keeps a filter of its own, its $or included, and passes the projection', async () => {
    const seen: Array<{ filter: Record<string, unknown>; projection: unknown }> = [];
    const model = fakeModel(ROWS, seen);
    const first = await findPage<Row>(
      model,
      { $or: [{ _id: 'e' }, { _id: 'c1' }, { _id: 'a' }] },
      { ...keyset, limit: 1, projection: { body: 0 } },
    );
    expect(first.items.map((r) => r._id)).toEqual(['e']);
    const second = await findPage<Row>(
      model,
      { $or: [{ _id: 'e' }, { _id: 'c1' }, { _id: 'a' }] },
      { ...keyset, limit: 1, cursor: first.nextCursor },
    );
    expect(second.items.map((r) => r._id)).toEqual(['c1']);
    expect(Object.keys(seen[1].filter)).toEqual(['$and']);
    expect(seen[0].projection).toEqual({ body: 0 });
  });

  it('a page read with limit + 1 rows has a cursor; one with limit rows or fewer has none', () => {
    expect(keysetPage(keyset, ROWS.slice(0, 3), 2)).toMatchObject({ hasMore: true, items: ROWS.slice(0, 2) });
    expect(keysetPage(keyset, ROWS.slice(0, 2), 2)).toEqual({ items: ROWS.slice(0, 2), hasMore: false, nextCursor: null });
    expect(keysetPage(keyset, [], 2)).toEqual({ items: [], hasMore: false, nextCursor: null });
  });

  it("refuses a cursor of another list, a forged one and one that holds no position (400 invalid_cursor); an area's decode wins", () => {
    const { nextCursor } = keysetPage(keyset, ROWS, 1);
    expect(keysetAfter(keyset, nextCursor)).toEqual({
      $or: [{ createdAt: { $lt: t(5) } }, { createdAt: t(5), _id: { $lt: 'e' } }],
    });
    expect(keysetAfter(keyset, null)).toEqual({});
    const invalid = expect.objectContaining({ code: 'invalid_cursor', status: 400 });
    expect(() => keysetAfter({ ...keyset, binding: 'rows:acct-2' }, nextCursor)).toThrow(invalid);
    expect(() => keysetAfter(keyset, `${nextCursor}x`)).toThrow(invalid);
    expect(() => keysetAfter(keyset, encodeCursor({ t: 1, id: 'e' }, keyset.binding))).toThrow(invalid);
    const decode = () => {
      throw badRequest('area_cursor', 'not ours');
    };
    expect(() => keysetAfter({ ...keyset, decode }, nextCursor)).toThrow(expect.objectContaining({ code: 'area_cursor' }));
  });

  it('a list oldest first continues after its cursor with $gt and sorts ascending', () => {
    const asc = { ...keyset, order: 1 as const };
    expect(keysetSort(asc)).toEqual({ createdAt: 1, _id: 1 });
    const { nextCursor } = keysetPage(asc, [ROWS[4], ROWS[3], ROWS[2]], 2);
    expect(keysetAfter(asc, nextCursor)).toEqual({
      $or: [{ createdAt: { $gt: t(3) } }, { createdAt: t(3), _id: { $gt: 'c1' } }],
    });
  });

  it("a list's own spelling writes the cursor it wrote by hand, byte for byte, and reads it back", () => {
    const rows = [ROWS[0], ROWS[1]];
    const iso = { ...keyset, position: { value: 't', id: 'id', form: 'iso' as const } };
    expect(keysetPage(iso, rows, 1).nextCursor).toBe(encodeCursor({ t: t(5).toISOString(), id: 'e' }, keyset.binding));
    const ms = { ...keyset, position: { value: 't', id: 'id', form: 'ms' as const } };
    const msCursor = keysetPage(ms, rows, 1).nextCursor;
    expect(msCursor).toBe(encodeCursor({ t: t(5).getTime(), id: 'e' }, keyset.binding));
    expect(keysetAfter(ms, msCursor)).toEqual({ $or: [{ createdAt: { $lt: t(5) } }, { createdAt: t(5), _id: { $lt: 'e' } }] });
    const raw = { ...keyset, field: 'size', position: { value: 'v', id: 'id', form: 'raw' as const } };
    const sized = [
      { _id: 'b', createdAt: t(1), size: 0 },
      { _id: 'a', createdAt: t(1), size: 0 },
    ];
    const rawCursor = keysetPage(raw, sized, 1).nextCursor;
    expect(rawCursor).toBe(encodeCursor({ v: 0, id: 'b' }, keyset.binding));
    expect(keysetAfter(raw, rawCursor)).toEqual({ $or: [{ size: { $lt: 0 } }, { size: 0, _id: { $lt: 'b' } }] });
    expect(() => keysetAfter(ms, encodeCursor({ t: 'x', id: 'e' }, keyset.binding))).toThrow(
      expect.objectContaining({ code: 'invalid_cursor' }),
    );
  });
});
