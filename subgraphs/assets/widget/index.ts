/**
 * The browser-upload widget (its script and page on the bridge listener).
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { widgetModule } from './module';
