import type { Readable } from 'node:stream';

/**
 * Kernel port (additive, declared beside `core/ports.ts` by module augmentation): the bytes of an
 * account's stored asset, for areas that hand files on (mail attachments). Provided by the Assets
 * area. Only a deliverable asset is a file here: ready, scanned clean, within the caller's account.
 */
export interface AssetFile {
  assetId: string;
  /** The version whose bytes `open` streams (pinned when a message is accepted). */
  version: number;
  filename: string;
  contentType: string;
  size: number;
  sha256: string;
  open(): Readable;
}

export interface AssetFiles {
  /**
   * The asset's file at `version` (its current version when omitted), or null when the account has
   * no such asset, it is not ready or not clean, or that version's bytes are gone.
   */
  file(accountId: string, assetId: string, version?: number): Promise<AssetFile | null>;
}

declare module './ports' {
  interface KernelPorts {
    assetFiles: AssetFiles;
  }
}
