import type { ActivitySource } from './activity-source';
import type { AgentActionPerformers, AgentActionsPort } from './agent-actions';
import type { Principal } from './principal';

/**
 * Kernel ports: what one area offers the others, declared here so that no area imports another.
 * An area provides a port from its definition (`provides`); the composition root wires it; a
 * consumer reads it at call time through `ctx.ports.get(name)`.
 */

/** A project as the directory (identity) knows it. */
export interface ProjectRecord {
  id: string;
  accountId: string;
  name: string;
  sourceType: string | null;
  createdAt: Date;
}

/** Projects and who may see them (provided by identity). */
export interface ProjectDirectory {
  /**
   * `opts.id` fixes the project id (a resumed create passes the same one): when that project exists
   * for the account it is returned, not created again.
   */
  createProject(accountId: string, name: string, sourceType?: string | null, opts?: { id?: string }): Promise<ProjectRecord>;
  findProject(projectId: string): Promise<ProjectRecord | null>;
  canAccessProject(principal: Principal | null, projectId: string): Promise<boolean>;
  /** Creates the account (with a plan) when it does not exist yet; returns its id. */
  ensureAccount(slug: string, plan?: 'free' | 'pro'): Promise<{ id: string; slug: string; plan: 'free' | 'pro' }>;
}

/** Sender addresses an account has verified (`platform senders verify`); provided by identity. */
export interface VerifiedSenders {
  isVerified(accountId: string, email: string): Promise<boolean>;
}

/** A metered draw on the account's AI credits (provided by billing). */
export interface CreditUsage {
  accountId: string;
  product: 'assets' | 'agents' | 'workflows';
  credits: number;
  description?: string;
  /** Where it came from, e.g. `assets.ai.analyze`. */
  source: string;
  /** Same key → the same entry, never a second draw. */
  idempotencyKey: string;
}

export interface CreditLedgerPort {
  /** Records usage; throws a 402 PlatformError when it would overdraw (unless the product is byok). */
  recordUsage(usage: CreditUsage): Promise<{ entryId: string; balanceAfter: number }>;
}

/**
 * Resolves a bearer key to its principal (provided by identity). For data planes that take raw
 * bytes outside GraphQL (Assets uploads), where the router's own authentication does not run.
 */
export interface BearerAuthenticator {
  authenticate(bearerKey: string): Promise<Principal | null>;
}

/**
 * Whether a key still stands (not revoked, and of this account), provided by identity: credentials
 * derived from a key (upload capabilities, session URLs, workflow-hook actors) end with it.
 */
export interface KeyStatusPort {
  isLive(accountId: string, keyId: string): Promise<boolean>;
}

export interface KernelPorts {
  projects: ProjectDirectory;
  /** Added by Assets for its upload data plane; see BearerAuthenticator. */
  authenticator: BearerAuthenticator;
  keyStatus: KeyStatusPort;
  senders: VerifiedSenders;
  credits: CreditLedgerPort;
  /** Every registered area's activity sources (collected by the composition root). */
  activitySources: ActivitySource[];
  /** Agent actions needing approval, proposed by any area (provided by activity; core/agent-actions.ts). */
  agentActions: AgentActionsPort;
  /** Who performs a decided agent action, by action-key prefix (kernel-owned; core/agent-actions.ts). */
  agentActionPerformers: AgentActionPerformers;
}

export type PortName = keyof KernelPorts;

/** The ports wired in this process; a missing one is a wiring error named in one sentence. */
export class Ports {
  private readonly provided = new Map<PortName, unknown>();

  provide<K extends PortName>(name: K, impl: KernelPorts[K]): void {
    this.provided.set(name, impl);
  }

  get<K extends PortName>(name: K): KernelPorts[K] {
    const impl = this.provided.get(name);
    if (!impl) throw new Error(`kernel port "${name}" is not provided in this process (is its area registered?)`);
    return impl as KernelPorts[K];
  }

  has(name: PortName): boolean {
    return this.provided.has(name);
  }
}
