/**
 * Workflows, automations and approvals, with their MCP tools, inbound hooks and REST rows.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { workflowsModule, type WorkflowsModuleServices } from './module';
export type { RunDoc } from './model';
export { RunType, toRun } from './resolvers';
export type { WorkflowService } from './service';
