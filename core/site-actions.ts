/**
 * Kernel port: lifecycle actions on a project's publishing site for trusted callers inside the
 * platform (an approved agent action). Provided by the publishing area, so the action takes the
 * site's lifecycle lock and its fencing like any API request; declared here by augmenting
 * `KernelPorts`, beside the other ports.
 */
export interface SiteActionRequest {
  accountId: string;
  projectId: string;
  action: 'restart';
  /** Chosen by the caller and stable across its retries: a second call returns the same operation. */
  operationId: string;
  initiator: Record<string, unknown>;
}

export interface SiteActions {
  /** Starts the action's operation (or finds the one already started under this id); 409 when the site is busy or absent. */
  run(request: SiteActionRequest): Promise<{ operationId: string }>;
}

declare module './ports' {
  interface KernelPorts {
    siteActions: SiteActions;
  }
}
