import { GraphQLDateTimeISO } from 'graphql-scalars';
import { isoDateSerializer, isoString } from './graphql-dates';

describe('isoString', () => {
  it('writes what toISOString writes, for every year 0–9999 and the edges of a day', () => {
    const at = [
      0,
      1,
      -1,
      999,
      86_399_999,
      Date.UTC(2000, 1, 29, 23, 59, 59, 999),
      Date.UTC(0, 0, 1),
      Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    ];
    at.push(new Date('0000-01-01T00:00:00.000Z').getTime());
    for (let i = 0; i < 20_000; i++) at.push(Math.floor((Math.random() * 2 - 0.8) * 253_402_300_800_000));
    for (const t of at) {
      const date = new Date(t);
      const year = date.getUTCFullYear();
      if (year >= 0 && year <= 9999) expect(isoString(date)).toBe(date.toISOString());
      else expect(isoString(date)).toBeUndefined();
    }
  });

  it('leaves other years and invalid dates to the scalar', () => {
    expect(isoString(new Date(Date.UTC(10000, 0, 1)))).toBeUndefined();
    expect(isoString(new Date(Date.UTC(-1, 0, 1)))).toBeUndefined();
    expect(isoString(new Date(NaN))).toBeUndefined();
  });
});

describe('isoDateSerializer', () => {
  const serialize = isoDateSerializer((v) => GraphQLDateTimeISO.serialize(v));
  it("answers the scalar's answer, errors included", () => {
    for (const v of [new Date(), new Date(Date.UTC(10000, 0, 1)), '2020-01-02T03:04:05Z', 1_700_000_000_000]) {
      expect(serialize(v)).toBe(GraphQLDateTimeISO.serialize(v));
    }
    for (const v of [new Date(NaN), 'not a date', {}]) expect(() => serialize(v)).toThrow(/DateTime/);
  });
});
