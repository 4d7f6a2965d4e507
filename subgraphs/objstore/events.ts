import { OBJECT_EVENTS_TOPIC } from '../../core/events/object-events';

/** Topics this area reads (after the prefix). It publishes none: deliveries leave as pull or push. */
export const CONSUMED_TOPICS = { objects: OBJECT_EVENTS_TOPIC } as const;
/** Consumer group suffix: `${prefix}.objstore.fanout`. */
export const FANOUT_GROUP = 'fanout';
