import { redactMessage } from './redact';

describe('redactMessage', () => {
  it.each([
    ['provider said: api_key=sk_live_abc123 is invalid', 'sk_live_abc123'],
    ['GET https://x.test/v1?token=abcd1234&x=1 failed', 'abcd1234'],
    ['cannot connect to postgres://admin:hunter2@db.internal:5432/app', 'hunter2'],
    ['header Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-xyz', 'eyJhbGciOiJIUzI1NiJ9'],
    ['{"client_secret": "s3cr3t-value", "ok": true}', 's3cr3t-value'],
    ['PASSWORD=pa55word rejected', 'pa55word'],
    ['key AKIAABCDEFGHIJKLMNOP leaked', 'AKIAABCDEFGHIJKLMNOP'],
    ['stripe refused sk_test_51Habc', 'sk_test_51Habc'],
    ['digest 0123456789abcdef0123456789abcdef01234567 mismatch', '0123456789abcdef0123456789abcdef01234567'],
  ])('masks the secret in %p', (input, secret) => {
    const out = redactMessage(input);
    expect(out).not.toContain(secret);
    expect(out).toContain('[redacted]');
  });

  it('keeps ordinary messages and ids readable', () => {
    const msg = 'site 3f1c2a9e-8b7d-4c6e-9f00-112233445566 failed at step dns: timeout after 30s';
    expect(redactMessage(msg)).toBe(msg);
  });

  it('keeps the name of a masked pair', () => {
    expect(redactMessage('api_key=sk_live_abc123')).toBe('api_key=[redacted]');
  });

  it('accepts errors and truncates long messages', () => {
    expect(redactMessage(new Error('boom'))).toBe('boom');
    expect(redactMessage('x '.repeat(2000)).length).toBeLessThanOrEqual(1000);
  });
});
