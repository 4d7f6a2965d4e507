// The order of these imports is the order of the types in schema/assets.graphql (type-graphql
// registers a type when its file is first read): a new module goes before the last line.
import { coreModule, type CoreModuleServices } from './storage';
import { collectionsModule, type CollectionsModuleServices } from './collections';
import { bulkModule, type BulkModuleServices } from './bulk';
import { webhooksModule, type WebhooksModuleServices } from './webhooks';
import { connectionsModule, type ConnectionsModuleServices } from './connections';
import { domainsModule, type DomainsModuleServices } from './domains';
import { migrationsModule, type MigrationsModuleServices } from './migrations';
import { widgetModule } from './widget';
import { bucketOpsModule, type BucketOpsServices } from './bucket-ops';
import { lifecycleModule, type LifecycleModuleServices } from './lifecycle';
import { type UsageModuleServices, usageModule } from './usage';
import { viewsModule, type ViewsModuleServices } from './views';
import { videoModule, type VideoModuleServices } from './video';
import { workflowsModule, type WorkflowsModuleServices } from './workflows';
import { aiModule, type AiModuleServices } from './ai';
import { generationsModule, type GenerationsModuleServices } from './generations';
import { textModule, type TextModuleServices } from './text';
// Last: its resolver reads the kinds' types.
import { jobsModule } from './jobs';

/**
 * Every module of Assets, in order (docs/decisions/0180-assets-modules.md). A module's services are
 * built after those of the modules above it, which it receives; its routes and resolvers are listed
 * in this order (the OpenAPI document and the schema follow it). Adding a module is its folder with a
 * `module.ts` plus one line here (and its services' type below).
 */
export const ASSETS_MODULES = [
  usageModule,
  coreModule,
  workflowsModule,
  collectionsModule,
  webhooksModule,
  bulkModule,
  domainsModule,
  connectionsModule,
  widgetModule,
  migrationsModule,
  lifecycleModule,
  viewsModule,
  videoModule,
  aiModule,
  textModule,
  generationsModule,
  bucketOpsModule,
  jobsModule,
] as const;

/** All the services of the area: what every module's hooks receive. */
export type AssetsServices = UsageModuleServices &
  CoreModuleServices &
  WorkflowsModuleServices &
  CollectionsModuleServices &
  WebhooksModuleServices &
  BulkModuleServices &
  DomainsModuleServices &
  ConnectionsModuleServices &
  MigrationsModuleServices &
  LifecycleModuleServices &
  ViewsModuleServices &
  VideoModuleServices &
  AiModuleServices &
  TextModuleServices &
  GenerationsModuleServices &
  BucketOpsServices;
