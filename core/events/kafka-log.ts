import { logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from '../logger';
import { isSettlingMessage } from './kafka-settling';

/**
 * kafkajs's own log lines, mapped onto the platform's logger (docs/decisions/0300-kafka-settling-log.md).
 *
 * kafkajs logs every error answer of the broker at error level, even one it is about to retry:
 * while a fresh broker settles (its `__consumer_offsets` topic is created by the first consumer
 * group, a new topic's leaders are elected, a group rebalances) the first start printed a dozen
 * "group coordinator is not available" lines although nothing was wrong. Those answers are
 * retried (by kafkajs, and by the bus: `untilSettled`), so while the condition is young they are
 * logged at debug; one that lasts longer than `SETTLE_MS` is logged at its own
 * level again, since then something is wrong. Every other line keeps its level. Which answers
 * are settling ones: `./kafka-settling.ts`.
 */

/** How long one settling answer may keep coming back before it is an error again: 30 s. */
export const SETTLE_MS = 30_000;
/** A settling answer not seen for this long starts a new streak (a later rebalance, a broker restart): 10 s. */
const QUIET_MS = 10_000;

export type LogLevelName = 'error' | 'warn' | 'info' | 'debug';

const LEVELS: Record<number, LogLevelName> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** `Crash: KafkaJSProtocolError: <message>` (a consumer's runner gave up; kafkajs restarts it). */
const CRASH = /^Crash: \w+: (.*)$/s;
const RESTARTING = /^Restarting the consumer in \d+ms$/;

type Entry = Pick<LogEntry, 'namespace' | 'level'> & { log: { message: string; [extra: string]: unknown } };

/**
 * The level each kafkajs line is logged at. Stateful: it follows each settling answer's streak,
 * and which consumer groups just crashed on one (their "Restarting the consumer" line follows).
 */
export class KafkaLogLevels {
  private readonly streaks = new Map<string, { first: number; last: number }>();
  private readonly quietRestarts = new Set<string>();

  constructor(private readonly now: () => number = Date.now) {}

  levelOf({ namespace, level, log }: Entry): LogLevelName {
    const own = LEVELS[level] ?? 'warn';
    const group = String(log.groupId ?? '');
    if (namespace === 'Consumer' && RESTARTING.test(log.message)) {
      return this.quietRestarts.delete(group) ? 'debug' : own;
    }
    const crash = namespace === 'Consumer' ? CRASH.exec(log.message) : null;
    const answer =
      crash?.[1] ?? (namespace === 'Connection' && log.message.startsWith('Response ') ? String(log.error ?? '') : '');
    const settling = isSettlingMessage(answer) && this.young(answer) && (own === 'error' || own === 'warn');
    if (crash && settling) this.quietRestarts.add(group);
    else if (crash) this.quietRestarts.delete(group);
    return settling ? 'debug' : own;
  }

  /** Records one more sighting of `answer`; true while its streak is younger than SETTLE_MS. */
  private young(answer: string): boolean {
    const t = this.now();
    const streak = this.streaks.get(answer);
    if (!streak || t - streak.last > QUIET_MS) {
      this.streaks.set(answer, { first: t, last: t });
      return true;
    }
    streak.last = t;
    return t - streak.first <= SETTLE_MS;
  }
}

/** A kafkajs `logCreator` writing to `log` at the levels of a `KafkaLogLevels`. */
export function kafkaLogCreator(log: Logger, levels = new KafkaLogLevels()) {
  return () =>
    ({ namespace, level, log: entry }: LogEntry) => {
      const { message, timestamp: _ts, logger: _l, ...extra } = entry as LogEntry['log'] & { logger?: string };
      log[levels.levelOf({ namespace, level, log: entry })]({ namespace, ...extra }, message);
    };
}
