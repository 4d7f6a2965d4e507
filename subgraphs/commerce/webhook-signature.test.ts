import { signWebhook, verifyWebhook } from './webhook-signature';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

describe('Standard Webhooks signatures', () => {
  const body = Buffer.from('{"test": 2432232314}');
  const now = 1_614_265_330_000;
  const headers = (sig: string, ts = 1614265330) => ({
    'webhook-id': 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    'webhook-timestamp': String(ts),
    'webhook-signature': sig,
  });

  it('matches the Standard Webhooks reference vector', () => {
    expect(signWebhook(SECRET, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body)).toBe(
      'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
    );
  });

  it('accepts a valid signature among several; refuses tampering, wrong key, stale time, missing headers', () => {
    const good = signWebhook(SECRET, 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, body);
    expect(verifyWebhook(SECRET, headers(`v1,bogus ${good}`), body, now)).toMatchObject({ ok: true });
    expect(verifyWebhook(SECRET, headers(good), Buffer.from('{"test": 2432232315}'), now)).toMatchObject({ ok: false });
    expect(verifyWebhook('whsec_b3RoZXI=', headers(good), body, now)).toMatchObject({ ok: false });
    expect(verifyWebhook(SECRET, headers(good), body, now + 10 * 60_000)).toMatchObject({ ok: false });
    expect(verifyWebhook(SECRET, {}, body, now)).toMatchObject({ ok: false, reason: 'signature headers missing' });
  });
});
