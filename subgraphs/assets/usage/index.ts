/**
 * The usage counters (deliveries, transforms, AI spend per account and day): first in the list, everything counts into them.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { usageModule, type UsageModuleServices } from './module';
export { type AiCharge, countAiCharge, dayOf, USAGE_FIELDS, type UsageCounters, type UsageCounts, zeroCounts } from './usage';
