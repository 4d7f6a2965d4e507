import { readFileSync } from 'node:fs';
import { SETTLING_CLIENT_ERRORS, SETTLING_ERRORS, isSettling, untilSettled } from './kafka-settling';

/** An error as kafkajs builds one: a protocol error, or "retries exceeded" caused by one. */
const protocolError = (message: string) => Object.assign(new Error(message), { name: 'KafkaJSProtocolError', retriable: true });
const retriesExceeded = (cause: Error) =>
  Object.assign(new Error(cause.message, { cause }), { name: 'KafkaJSNumberOfRetriesExceeded' });

describe('a settling broker', () => {
  it("every settling answer is one of kafkajs's broker errors, worded as kafkajs words it, and its own give-up is in its source", () => {
    // kafkajs's own error table (not part of its typed API): an upgrade that rewords one fails here.
    const { errorCodes } = require('kafkajs/src/protocol/error') as { errorCodes: Array<{ type: string; message: string }> };
    const known = new Set(errorCodes.map((e) => e.message));
    for (const message of SETTLING_ERRORS) expect([message, known.has(message)]).toEqual([message, true]);
    const cluster = readFileSync(require.resolve('kafkajs/src/cluster/index.js'), 'utf8');
    for (const message of SETTLING_CLIENT_ERRORS) expect(cluster).toContain(`'${message}'`);
  });

  it('tells a settling failure from any other, through the errors it was caused by', () => {
    expect(isSettling(protocolError('The group coordinator is not available'))).toBe(true);
    expect(isSettling(retriesExceeded(protocolError('This server does not host this topic-partition')))).toBe(true);
    expect(
      isSettling(Object.assign(new Error('Failed to find group coordinator'), { name: 'KafkaJSGroupCoordinatorNotFound' })),
    ).toBe(true);
    expect(isSettling(new Error('other', { cause: protocolError('The group coordinator is not available') }))).toBe(true);
    expect(isSettling(new Error('Connection error: connect ECONNREFUSED 127.0.0.1:9092'))).toBe(false);
    expect(isSettling('The group coordinator is not available')).toBe(false);
    expect(isSettling(undefined)).toBe(false);
  });

  it('untilSettled asks again while the broker settles, fails at once on anything else, and gives up after its wait', async () => {
    let calls = 0;
    await expect(
      untilSettled(async () => {
        if (++calls < 3) throw protocolError('The group coordinator is not available');
        return 'joined';
      }),
    ).resolves.toBe('joined');
    expect(calls).toBe(3);

    calls = 0;
    const refused = new Error('Connection error: connect ECONNREFUSED');
    await expect(
      untilSettled(async () => {
        calls++;
        throw refused;
      }),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);

    calls = 0;
    const t0 = Date.now();
    await expect(
      untilSettled(async () => {
        calls++;
        throw protocolError('The group coordinator is not available');
      }, 500),
    ).rejects.toThrow('The group coordinator is not available');
    expect(calls).toBe(2); // at once, then after 200 ms; the next wait (400 ms) would pass the 500 ms
    expect(Date.now() - t0).toBeLessThan(1_000);
  });
});
