/** Topics of the activity area (after the prefix): each carries the item as the REST reads show it. */
export const ACTIVITY_TOPICS = {
  /** `{eventId, accountId, projectId, item}`; eventId is `<item id>@<version>` (stable across replays). */
  operationUpdates: 'activity.operation_updates',
  agentUpdates: 'activity.agent_updates',
} as const;

export interface ActivityUpdateEvent {
  eventId: string;
  accountId: string;
  projectId: string | null;
  item: Record<string, unknown>;
}
