import { Webhook } from 'standardwebhooks';
import { attemptOutcome, webhookHeaders } from './engine';

describe('the delivery rules', () => {
  const schedule = { retryBaseMs: 30_000, retryMaxMs: 3_600_000, maxAttempts: 8 };
  const done = new Date('2026-01-01T00:00:00Z');

  it('a 2xx succeeds; a failure waits base·2^(n-1), capped, and fails when attempts or the endpoint run out', () => {
    expect(attemptOutcome(204, 1, schedule, false, done)).toEqual({ ok: true, status: 'succeeded', nextAttemptAt: null });
    expect(attemptOutcome(500, 1, schedule, false, done).nextAttemptAt).toEqual(new Date(done.getTime() + 30_000));
    expect(attemptOutcome(null, 3, schedule, false, done).nextAttemptAt).toEqual(new Date(done.getTime() + 120_000));
    expect(attemptOutcome(500, 7, schedule, false, done).nextAttemptAt).toEqual(new Date(done.getTime() + 1_920_000));
    expect(attemptOutcome(500, 8, schedule, false, done)).toEqual({ ok: false, status: 'failed', nextAttemptAt: null });
    expect(attemptOutcome(302, 1, schedule, true, done).status).toBe('failed');
    expect(attemptOutcome(500, 20, { ...schedule, maxAttempts: 99 }, false, done).nextAttemptAt).toEqual(
      new Date(done.getTime() + 3_600_000),
    );
  });

  it('headers a receiver verifies with Standard Webhooks; webhook-id is the event id', () => {
    const secret = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;
    const at = new Date();
    const body = '{"type":"x"}';
    const headers = webhookHeaders('evt_1', at, new Webhook(secret).sign('evt_1', at, body), 'test/1');
    expect(headers['webhook-id']).toBe('evt_1');
    expect(new Webhook(secret).verify(body, headers)).toEqual({ type: 'x' });
  });
});
