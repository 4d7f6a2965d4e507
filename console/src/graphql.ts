import { gql } from 'urql';

/** The console's GraphQL documents and the shapes they answer (from schema/supergraph.graphql). */

export interface SiteFields {
  projectId: string;
  name: string;
  status: string;
  runtimeVersion: string;
  siteUrl: string;
  adminUrl: string;
  domain: string | null;
  deploymentMode: string;
  createdAt: string;
}

export interface ProjectRow {
  id: string;
  name: string;
  sourceType: string | null;
  createdAt: string;
  site: SiteFields | null;
}

export const PROJECTS = gql<{ projects: ProjectRow[] }, Record<string, never>>`
  query ConsoleProjects {
    projects {
      id
      name
      sourceType
      createdAt
      site {
        projectId
        name
        status
        runtimeVersion
        siteUrl
        adminUrl
        domain
        deploymentMode
        createdAt
      }
    }
  }
`;

export interface OperationUpdate {
  id: string;
  projectId: string;
  status: string;
  step: string;
  operationType: string;
  resourceType: string;
  errorCode: string | null;
  updatedAt: string;
}

export const OPERATION_UPDATED = gql<{ operationUpdated: OperationUpdate }, { projectId: string }>`
  subscription ConsoleOperationUpdated($projectId: ID!) {
    operationUpdated(projectId: $projectId) {
      id
      projectId
      status
      step
      operationType
      resourceType
      errorCode
      updatedAt
    }
  }
`;

export const TERMINAL_OPERATION = new Set(['completed', 'failed', 'succeeded', 'cancelled']);

export interface RuntimeOption {
  version: string;
  label: string;
  is_default: boolean;
  upgrade_predecessors: string[];
}

export interface ActivityPage {
  history?: { items: ActivityItem[]; has_more?: boolean; next_cursor?: string | null };
}

export interface ActivityItem {
  id: string;
  title?: string | null;
  type?: string | null;
  action_key?: string;
  summary?: string | null;
  status: string;
  current_step?: string | null;
  resource?: { type: string; id: string } | null;
  terminal?: { outcome: string; at: string | null; error_code: string | null } | null;
  tasks?: { id: string; name: string; status: string }[];
  created_at: string | null;
  updated_at: string | null;
  approval?: {
    id: string;
    status: string;
    can_decide: boolean;
    action_hash: string;
    expires_at: string | null;
  } | null;
}
