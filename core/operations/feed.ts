import type { FeedDefinition } from '../area';
import type { OperationEvent } from './store';

/** An operation event as the relay delivers it: the engine's payload plus the outbox `eventId`. */
export type RelayedOperationEvent = OperationEvent & { eventId?: string };

/**
 * `operationUpdated(projectId)`: every status or step change of a project's durable operations,
 * in order (the kernel topic is keyed by project). Any area whose operations belong to projects
 * lists this feed; an inaccessible project is refused exactly like a missing one.
 */
export const operationFeed: FeedDefinition<RelayedOperationEvent, { projectId: string }> = {
  field: 'operationUpdated',
  fieldSdl: '"Every status change of the project\'s operations, in order."\n  operationUpdated(projectId: ID!): OperationUpdate!',
  typesSdl: /* GraphQL */ `
    "A status or step change of a durable operation."
    type OperationUpdate {
      id: ID!
      projectId: ID!
      status: String!
      step: String!
      operationType: String!
      resourceType: String!
      errorCode: String
      updatedAt: String!
    }
  `,
  topic: 'operations',
  keyOfEvent: (e) => e.projectId,
  keyOfArgs: (a) => a.projectId,
  notFound: { code: 'project_not_found', message: 'project not found' },
  authorize: (principal, a, ports) => ports.get('projects').canAccessProject(principal, a.projectId),
  eventId: (e) => e.eventId,
};
