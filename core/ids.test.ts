import { isUuid, newId } from './ids';

describe('ids', () => {
  it('makes distinct v4 UUIDs', () => {
    const ids = new Set(Array.from({ length: 1000 }, newId));
    expect(ids.size).toBe(1000);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('recognises UUIDs only', () => {
    expect(isUuid(newId())).toBe(true);
    expect(isUuid('3F1C2A9E-8B7D-4C6E-9F00-112233445566')).toBe(true);
    expect(isUuid('3f1c2a9e-8b7d-4c6e-9f00-11223344556')).toBe(false);
    expect(isUuid('not-a-uuid')).toBe(false);
    expect(isUuid(42)).toBe(false);
  });
});
