/**
 * Uploads: streamed multipart uploads and replaces, upload sessions and parts, upload capabilities, the upload byte path.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export type { AssetAccess } from './asset-access';
export { UploadCapabilities } from './capabilities';
export { assetsUploadPlane, readForm, type ReadForm, releaseForm } from './plane';
export { uploadRoutes } from './routes';
export { UploadSessions } from './sessions';
export { parseUploadFields, uploadFieldsSchema, Uploads } from './uploads';
