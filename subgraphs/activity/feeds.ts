import type { FeedDefinition } from '../../core/area';
import type { Ports } from '../../core/ports';
import type { Principal } from '../../core/principal';
import { ACTIVITY_TOPICS, type ActivityUpdateEvent } from './events';

/**
 * graphql-ws feeds (issue 15 item 5): each update carries the item exactly as the REST reads show
 * it, for the subscribers of its project; a principal who cannot read the project is refused.
 */
const TYPES_SDL = '"An activity item as the REST reads show it (contract v1)."\nscalar ActivityItemJSON';

type Args = { projectId: string };

function feed(field: string, topic: string, description: string): FeedDefinition<ActivityUpdateEvent, Args> {
  return {
    field,
    fieldSdl: `"${description}"\n  ${field}(projectId: ID!): ActivityItemJSON!`,
    typesSdl: TYPES_SDL,
    topic,
    keyOfEvent: (e) => (e.projectId ? `project:${e.projectId}` : null),
    keyOfArgs: (a) => `project:${a.projectId}`,
    notFound: { code: 'activity_not_found', message: 'project not found' },
    authorize: async (p: Principal, a: Args, ports: Ports) =>
      typeof a.projectId === 'string' && ports.get('projects').canAccessProject(p, a.projectId),
    toPayload: (e) => e.item,
    eventId: (e) => e.eventId,
  };
}

export const activityFeeds = [
  feed('operationActivity', ACTIVITY_TOPICS.operationUpdates, 'Operation-activity items of a project as they change.'),
  feed('agentActivity', ACTIVITY_TOPICS.agentUpdates, 'Agent actions of a project as they change.'),
];
