/**
 * Text of an asset: OCR extractions (an AI job) and transcripts of audio and video.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { textModule, type TextModuleServices } from './module';
