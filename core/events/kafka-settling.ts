import { sleep } from '../sleep';

/**
 * A broker that is settling (docs/decisions/0300-kafka-settling-log.md): a fresh broker creates its
 * offsets topic for the first consumer group and elects the leaders of new topics, and until then
 * answers "ask again". Those answers are retried (`untilSettled`) and their log lines quieted
 * (`./kafka-log.ts`) while they are young; one that lasts is an error.
 */

/** The broker's "not settled yet, ask again" answers, as kafkajs words them (its error types in the comments). */
export const SETTLING_ERRORS: ReadonlySet<string> = new Set([
  'The group coordinator is not available', // GROUP_COORDINATOR_NOT_AVAILABLE
  "The coordinator is loading and hence can't process requests for this group", // GROUP_LOAD_IN_PROGRESS
  'This is not the correct coordinator for this group', // NOT_COORDINATOR_FOR_GROUP
  'There is no leader for this topic-partition as we are in the middle of a leadership election', // LEADER_NOT_AVAILABLE
  'This server is not the leader for that topic-partition', // NOT_LEADER_FOR_PARTITION
  'This server does not host this topic-partition', // UNKNOWN_TOPIC_OR_PARTITION
  'The group is rebalancing, so a rejoin is needed', // REBALANCE_IN_PROGRESS
]);

/**
 * What kafkajs itself says after its retries of a settling answer ran out: the consumer's join
 * could not find its group's coordinator (`KafkaJSGroupCoordinatorNotFound`, which kafkajs does not
 * restart a consumer after).
 */
export const SETTLING_CLIENT_ERRORS: ReadonlySet<string> = new Set(['Failed to find group coordinator']);

/** Whether a broker answer or kafkajs error message is a settling one. */
export const isSettlingMessage = (message: string): boolean =>
  SETTLING_ERRORS.has(message) || SETTLING_CLIENT_ERRORS.has(message);

/** Whether `err` (or an error it was caused by) is a settling answer: the same request succeeds once the broker settles. */
export function isSettling(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as Error & { cause?: unknown }).cause, depth++) {
    if (isSettlingMessage(e.message)) return true;
  }
  return false;
}

/** How long the bus waits out a settling broker (a fresh broker's first topics and consumer groups): 30 s. */
const SETTLE_WAIT_MS = 30_000;

/**
 * Runs `fn` again while it fails with a settling answer (`isSettling`: no leader yet, the group
 * coordinator not available yet), backing off 200 ms doubling to 2 s, for at most `waitMs`; any
 * other failure is thrown at once. A fresh broker settles in seconds; kafkajs's own retries of a
 * request last about three.
 */
export async function untilSettled<T>(fn: () => Promise<T>, waitMs = SETTLE_WAIT_MS): Promise<T> {
  const deadline = Date.now() + waitMs;
  for (let delay = 200; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await fn();
    } catch (e) {
      if (!isSettling(e) || Date.now() + delay > deadline) throw e;
      await sleep(delay);
    }
  }
}
