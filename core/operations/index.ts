export * from './engine';
export * from './model';
export * from './redact';
export { OperationStore, type OperationEvent, type OperationRef, type Fence } from './store';
export * from './fencing';
