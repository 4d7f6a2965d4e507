import type { Logger } from '../logger';
import { KafkaLogLevels, SETTLE_MS, kafkaLogCreator } from './kafka-log';

/** kafkajs's `logLevel.ERROR` and `.WARN` (a unit test of the mapping loads no Kafka client). */
const logLevel = { ERROR: 1, WARN: 2 } as const;

const coordinatorAnswer = {
  namespace: 'Connection',
  level: logLevel.ERROR,
  log: {
    message: 'Response GroupCoordinator(key: 10, version: 2)',
    broker: '127.0.0.1:9092',
    error: 'The group coordinator is not available',
  },
};
const crash = (groupId: string, message: string) => ({
  namespace: 'Consumer',
  level: logLevel.ERROR,
  log: { message: `Crash: KafkaJSProtocolError: ${message}`, groupId },
});
const restarting = (groupId: string) => ({
  namespace: 'Consumer',
  level: logLevel.ERROR,
  log: { message: 'Restarting the consumer in 100ms', groupId, retryTime: 100 },
});

describe("kafkajs's log lines while the broker settles", () => {
  it('a settling answer is logged at debug while it is young; any other error keeps its level', () => {
    const levels = new KafkaLogLevels(() => 0);
    expect(levels.levelOf(coordinatorAnswer)).toBe('debug');
    expect(
      levels.levelOf({
        ...coordinatorAnswer,
        log: { ...coordinatorAnswer.log, error: 'Connection error: connect ECONNREFUSED' },
      }),
    ).toBe('error');
    expect(
      levels.levelOf({ namespace: 'Connection', level: logLevel.ERROR, log: { message: 'Connection timeout', broker: 'x' } }),
    ).toBe('error');
    // Only the broker's answers: the same words in another line are not demoted.
    expect(
      levels.levelOf({
        namespace: 'Admin',
        level: logLevel.ERROR,
        log: { message: 'x', error: 'The group coordinator is not available' },
      }),
    ).toBe('error');
    expect(levels.levelOf({ namespace: 'Consumer', level: logLevel.WARN, log: { message: 'something else' } })).toBe('warn');
  });

  it("a consumer's crash on a settling answer, and its restart, are debug; a crash on anything else stays an error", () => {
    const levels = new KafkaLogLevels(() => 0);
    expect(levels.levelOf(crash('g1', "The coordinator is loading and hence can't process requests for this group"))).toBe(
      'debug',
    );
    expect(levels.levelOf(restarting('g1'))).toBe('debug');
    expect(levels.levelOf(crash('g3', 'Failed to find group coordinator'))).toBe('debug');
    expect(levels.levelOf(crash('g2', 'Connection error: connect ECONNREFUSED'))).toBe('error');
    expect(levels.levelOf(restarting('g2'))).toBe('error');
    // The quiet restart was g1's once: a later restart line of g1 without a settling crash is an error.
    expect(levels.levelOf(restarting('g1'))).toBe('error');
  });

  it('an answer that keeps coming back past SETTLE_MS is an error again; after a quiet gap a new streak starts', () => {
    let now = 0;
    const levels = new KafkaLogLevels(() => now);
    for (; now <= SETTLE_MS; now += 1000) expect(levels.levelOf(coordinatorAnswer)).toBe('debug');
    expect(levels.levelOf(coordinatorAnswer)).toBe('error');
    expect(levels.levelOf(crash('g', 'The group coordinator is not available'))).toBe('error');
    expect(levels.levelOf(restarting('g'))).toBe('error');
    now += 60_000;
    expect(levels.levelOf(coordinatorAnswer)).toBe('debug');
  });

  it("kafkaLogCreator writes kafkajs's line to the logger at the mapped level, with its fields", () => {
    const calls: Array<[string, Record<string, unknown>, string]> = [];
    const log = Object.fromEntries(
      ['error', 'warn', 'info', 'debug'].map((level) => [
        level,
        (obj: Record<string, unknown>, msg: string) => calls.push([level, obj, msg]),
      ]),
    ) as unknown as Logger;
    const write = kafkaLogCreator(log)();
    write({
      namespace: 'Connection',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: { ...coordinatorAnswer.log, timestamp: 'now' },
    });
    write({
      namespace: 'Producer',
      level: logLevel.ERROR,
      label: 'ERROR',
      log: { message: 'Failed to send messages', timestamp: 'now' },
    });
    expect(calls).toEqual([
      [
        'debug',
        { namespace: 'Connection', broker: '127.0.0.1:9092', error: 'The group coordinator is not available' },
        coordinatorAnswer.log.message,
      ],
      ['error', { namespace: 'Producer' }, 'Failed to send messages'],
    ]);
  });
});
