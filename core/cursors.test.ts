import { decodeCursor, encodeCursor } from './cursors';

describe('opaque cursors', () => {
  it('round-trips a position bound to its sort', () => {
    const c = encodeCursor({ createdAt: '2026-01-01T00:00:00Z', id: 'x' }, 'created_at:desc');
    expect(decodeCursor(c, 'created_at:desc')).toEqual({ createdAt: '2026-01-01T00:00:00Z', id: 'x' });
  });

  it('refuses a cursor of another sort, a tampered one and garbage with 400 invalid_cursor', () => {
    const c = encodeCursor({ id: 'x' }, 'created_at:desc');
    expect(() => decodeCursor(c, 'size:asc')).toThrow(expect.objectContaining({ code: 'invalid_cursor', status: 400 }));
    const [body, mac] = c.split('.');
    const forged = Buffer.from(JSON.stringify({ b: 'created_at:desc', p: { id: 'y' } })).toString('base64url');
    expect(forged).not.toBe(body);
    expect(() => decodeCursor(`${forged}.${mac}`, 'created_at:desc')).toThrow(
      expect.objectContaining({ code: 'invalid_cursor' }),
    );
    expect(() => decodeCursor('garbage', 'created_at:desc')).toThrow(expect.objectContaining({ code: 'invalid_cursor' }));
  });
});
