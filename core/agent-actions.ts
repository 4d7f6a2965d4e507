/**
 * Kernel port: agent actions that need a person's approval (spec 2.7, 3.6, 4.7). Any area proposes
 * an action here (the activity area provides the port and shows it in agent activity); the area
 * registers a performer for its action-key prefix, which is called when the action is decided —
 * through `POST /api/v1/agents/approvals/{id}/decision` or through the area's own route, which
 * calls `decide` here so that one conditional update on the action settles the decision once.
 */

export type AgentActionRisk = 'low' | 'medium' | 'high';
export type AgentActionDecision = 'approved' | 'denied';

export interface AgentActionProposal {
  /** Dotted words; its first word is the proposing area's prefix, e.g. `assets.workflow.continue`. */
  actionKey: string;
  accountId: string;
  /** Account-wide (e.g. an Assets tool call) or one project's. */
  scope: { type: 'account' } | { type: 'project'; projectId: string };
  /** The area's own approval id: the same id on both decision routes. A second propose with it is a no-op. */
  approvalId: string;
  /** The hash a decision must offer (the area's own, so both routes accept the same one). */
  actionHash: string;
  title: string;
  summary: string;
  risk: AgentActionRisk;
  expiresAt: Date;
  /** Who asked for it (`{type: 'api_key', id}`, `{type: 'workflow_run', id}`). */
  principal: { type: string; id: string | null };
  /** The affected resource, when one: `{type: 'asset_workflow_run', id}`. */
  resource?: { type: string; id: string } | null;
}

export interface AgentActionOperationLink {
  /** `<source_kind>:<UUID>` of the operation the work started. */
  activityId: string;
  resourceType: string;
  resourceId: string;
  projectId: string | null;
  relation: 'originated' | 'controlled' | 'observed';
}

export interface DecidedAgentAction {
  approvalId: string;
  accountId: string;
  actionKey: string;
  decision: AgentActionDecision;
  decidedBy: string | null;
  note: string | null;
}

/**
 * Does the decided work. Called after the decision is recorded, possibly more than once (a retried
 * decision, a crash between recording and performing): it must be idempotent. A PlatformError
 * below 500 means the work was refused (the action fails); anything else leaves the continuation
 * `unavailable` and the same decision may be retried.
 */
export interface AgentActionPerformer {
  perform(decided: DecidedAgentAction): Promise<{ operations: AgentActionOperationLink[] }>;
}

/** What a decision through an area's own route came to (after the performer ran). */
export type AreaDecisionOutcome =
  | { outcome: 'recorded' | 'repeated'; decision: AgentActionDecision }
  /** A different decision is already recorded: 409, nothing runs. */
  | { outcome: 'conflict'; decision: AgentActionDecision }
  /** The approval expired before a decision: 410. */
  | { outcome: 'expired' }
  /** The proposing area withdrew it (closed as `cancelled`) before a decision: 409. */
  | { outcome: 'withdrawn' }
  /** No action was proposed under this approval id. */
  | { outcome: 'unknown' };

export interface AgentActionsPort {
  /** Records the action pending approval (idempotent on `approvalId`). */
  propose(proposal: AgentActionProposal): Promise<{ actionId: string }>;
  /**
   * A decision made through the area's own route (the area checked who may decide). The same
   * conditional update as the activity route decides; the performer then runs.
   */
  decide(input: {
    approvalId: string;
    accountId: string;
    decision: AgentActionDecision;
    decidedBy: string | null;
    note?: string | null;
  }): Promise<AreaDecisionOutcome>;
  /**
   * The area ends a pending approval without a decision (`expired` past its time, `cancelled` when
   * its work was withdrawn). Returns the decision instead when one won the race.
   */
  close(input: {
    approvalId: string;
    accountId: string;
    as: 'expired' | 'cancelled';
  }): Promise<{ closed: boolean; decision: AgentActionDecision | null }>;
}

/** Performers by action-key prefix; owned by the kernel so registration order does not matter. */
export class AgentActionPerformers {
  private readonly byPrefix = new Map<string, AgentActionPerformer>();

  /** `prefix` ends with a dot (`assets.`): every key under it goes to this performer. */
  register(prefix: string, performer: AgentActionPerformer): void {
    if (!prefix.endsWith('.')) throw new Error(`performer prefix "${prefix}" must end with a dot`);
    this.byPrefix.set(prefix, performer);
  }

  /** The performer of the longest registered prefix of `actionKey`, or null. */
  performerFor(actionKey: string): AgentActionPerformer | null {
    let best: string | null = null;
    for (const p of this.byPrefix.keys()) if (actionKey.startsWith(p) && (!best || p.length > best.length)) best = p;
    return best ? this.byPrefix.get(best)! : null;
  }
}

/**
 * The one slot of the kernel's `Ports` this file needs, named structurally: `ports.ts` declares its
 * ports with this file's types, so importing it back would tie the two files in a circle.
 */
interface PerformerSlot {
  has(name: 'agentActionPerformers'): boolean;
  provide(name: 'agentActionPerformers', impl: AgentActionPerformers): void;
  get(name: 'agentActionPerformers'): AgentActionPerformers;
}

/** The process's performer registry (created on first use, whichever area comes first). */
export function agentActionPerformers(ports: PerformerSlot): AgentActionPerformers {
  if (!ports.has('agentActionPerformers')) ports.provide('agentActionPerformers', new AgentActionPerformers());
  return ports.get('agentActionPerformers');
}
