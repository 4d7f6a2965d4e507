/**
 * What is let in: the malware scanner (clamd, EICAR) and the account's content policy (types, sizes, sniffed MIME).
 *
 * The module's face: the only file other Assets modules and the registry import
 * (docs/decisions/0290-assets-module-faces.md).
 */
export {
  assetTypeOf,
  checkContent,
  type ContentPolicy,
  DEFAULT_POLICY,
  largestAllowed,
  policyOf,
  sniffMime,
} from './content-policy';
export { ClamdScanner, EicarScanner, type Scanner } from './scanner';
