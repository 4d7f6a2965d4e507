/**
 * Custom delivery domains, proven by a DNS TXT record.
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export { domainsModule, type DomainsModuleServices } from './module';
