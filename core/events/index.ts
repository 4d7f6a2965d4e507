export * from './event-bus';
export * from './kafka-event-bus';
export * from './memory-event-bus';
export * from './outbox';
export * from './topics';
