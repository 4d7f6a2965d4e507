import { createHmac } from 'node:crypto';
import { newSigningSecret, signPush, verifyPush } from './signing';
import { pushBackoffMs, PUSH_BACKOFF_BASE_MS, PUSH_BACKOFF_CAP_MS } from './settings';
import { matches } from './subscriptions';

describe('push signature', () => {
  it('verifies with a stock HMAC over timestamp.rawBody', () => {
    const secret = newSigningSecret();
    const body = '{"id":"e1","type":"object.created","data":{}}';
    const ts = Math.floor(Date.now() / 1000);
    const header = signPush(secret, ts, body);
    const expected = 'sha256=' + createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
    expect(header).toBe(expected);
    expect(verifyPush(secret, String(ts), body, header)).toBe(true);
    expect(verifyPush(secret, String(ts), body + ' ', header)).toBe(false);
    expect(verifyPush(secret, String(ts - 3600), body, signPush(secret, ts - 3600, body))).toBe(false);
  });
});

describe('push backoff', () => {
  it('is 30 s doubling to a one-hour cap', () => {
    const schedule = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((f) => pushBackoffMs(f, PUSH_BACKOFF_BASE_MS, PUSH_BACKOFF_CAP_MS) / 1000);
    expect(schedule).toEqual([30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
  });
});

describe('filters', () => {
  const sub = { eventTypes: ['object.created' as const], prefix: 'img/', suffix: '.png' };
  it('match literal prefix and suffix and the event type', () => {
    expect(matches(sub, { type: 'object.created', key: 'img/a.png' })).toBe(true);
    expect(matches(sub, { type: 'object.deleted', key: 'img/a.png' })).toBe(false);
    expect(matches(sub, { type: 'object.created', key: 'doc/a.png' })).toBe(false);
    expect(matches(sub, { type: 'object.created', key: 'img/a.jpg' })).toBe(false);
    expect(matches({ ...sub, prefix: 'img/*' }, { type: 'object.created', key: 'img/a.png' })).toBe(false);
  });
});
