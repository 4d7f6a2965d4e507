/**
 * AI actions: configuration, spend, the jobs that run them (OCR among them), and their prices.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { aiModule, type AiModuleServices } from './module';
export type { AiConfigs } from './config';
export { type AiJobs, notProcessable } from './jobs';
export type { AiDataDoc, AiJobDoc, AiModels } from './model';
export { creditsOf, periodOf, PRICE_MICROS } from './pricing';
export type { AiSpend } from './spend';
export { AiJobType, toAiJob } from './types';
