/**
 * Delivery of bytes: the CDN listener (public, signed, ranges), signed grants, copies in replica regions.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { assetsCdnPlane, notFound, sendVersion } from './cdn-plane';
export { AssetDelivery } from './delivery';
export { Replication } from './replication';
