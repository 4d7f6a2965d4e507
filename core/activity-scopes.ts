/**
 * Kernel ports (additive, declared beside `core/ports.ts` by module augmentation): what an
 * application or a database id stands for in the activity feeds (spec 4.6 `/applications/{appID}`,
 * `/databases/{databaseID}`). The area that owns the resource answers — commerce for applications
 * (a commerce connection), publisher for databases (a site's managed database) — so the activity
 * area never needs to know another area's records. Until one is provided, the activity area knows
 * those resources only by activity recorded about them.
 */
export interface ActivityScopeTarget {
  /** The project the resource belongs to (its access decides who may read the feed). */
  projectId: string;
  /** The operation resource types (`resourceType` of kernel operations) that are about it. */
  resourceTypes: string[];
  /** Agent actions about it: those of the project whose action key starts with this. */
  actionKeyPrefix: string;
}

export interface ActivityScopeDirectory {
  /** The resource with this id in the account, or null when there is none. */
  resolve(accountId: string, id: string): Promise<ActivityScopeTarget | null>;
}

declare module './ports' {
  interface KernelPorts {
    applicationScopes: ActivityScopeDirectory;
    databaseScopes: ActivityScopeDirectory;
  }
}
