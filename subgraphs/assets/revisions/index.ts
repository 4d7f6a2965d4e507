/**
 * Revisions: the entity tag of a record and the If-Match rules (428, 412).
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { etagOf, requiredRevision, revisionHeader, revisionStale } from './revisions';
