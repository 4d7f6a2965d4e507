/**
 * Webhooks: endpoints, the events of the object and record-change topics, signed deliveries.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { webhooksModule, type WebhooksModuleServices } from './module';
export { type AssetWebhookEmitter, type AssetWebhookEvent, noWebhooks, stableId } from './events';
export { fromObjectEvent, fromRecordChange } from './sources';
