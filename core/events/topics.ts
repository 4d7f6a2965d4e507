import { config } from '../config';

/** Logical topic names of the shared kernel; areas keep theirs in their own `events.ts`. */
export const TOPICS = {
  operations: 'operations',
} as const;

/** The physical topic: `${KAFKA_TOPIC_PREFIX}.${name}`, e.g. `platform.operations`. */
export function topicName(name: string): string {
  return `${config().KAFKA_TOPIC_PREFIX}.${name}`;
}

/** Where messages a handler cannot process end up. */
export function dlqTopic(topic: string): string {
  return `${topic}.dlq`;
}
