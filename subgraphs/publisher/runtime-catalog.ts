/**
 * The tested publishing runtimes. A create request must name one of these exact versions (or get
 * the default); an upgrade must follow an edge: the target lists the current version among its
 * `upgradePredecessors`.
 */
export interface RuntimeOption {
  version: string;
  label: string;
  image: string;
  digest: string;
  databaseRequirements: { engine: string; minVersion: string; minStorageGb: number };
  /** Smallest memory the runtime is tested with, in MiB. */
  memoryFloorMb: number;
  isDefault: boolean;
  /** Versions a site may upgrade from, straight to this one. */
  upgradePredecessors: string[];
}

const IMAGE = 'registry.platform.internal/publisher/runtime';

export const RUNTIME_CATALOG: readonly RuntimeOption[] = Object.freeze([
  {
    version: '5.101.2',
    label: 'Publisher 5.101 (maintenance)',
    image: IMAGE,
    digest: 'sha256:3b1f8c5e0a9d4f6b2c7e8a1d5f0b9c3e6a2d8f4b1c7e5a9d3f6b0c2e8a4d1f7b',
    databaseRequirements: { engine: 'mysql', minVersion: '8.0', minStorageGb: 5 },
    memoryFloorMb: 512,
    isDefault: false,
    upgradePredecessors: [],
  },
  {
    version: '5.105.0',
    label: 'Publisher 5.105',
    image: IMAGE,
    digest: 'sha256:8e2a6c4f1b9d7e3a5c0f8b2d6e4a1c9f7b3d5e0a2c8f6b4d1e9a7c3f5b0d2e8a',
    databaseRequirements: { engine: 'mysql', minVersion: '8.0', minStorageGb: 5 },
    memoryFloorMb: 512,
    isDefault: false,
    upgradePredecessors: ['5.101.2'],
  },
  {
    version: '6.2.1',
    label: 'Publisher 6.2 (recommended)',
    image: IMAGE,
    digest: 'sha256:c47d2e9a1f5b3c8e6a0d4f2b9e7c1a5d3f8b6e0c2a4d9f7b1e5c3a8d6f0b2e4c',
    databaseRequirements: { engine: 'mysql', minVersion: '8.0', minStorageGb: 10 },
    memoryFloorMb: 768,
    isDefault: true,
    upgradePredecessors: ['5.101.2', '5.105.0'],
  },
  {
    version: '6.4.0',
    label: 'Publisher 6.4',
    image: IMAGE,
    digest: 'sha256:5f9b3d7e1a2c6e8b4d0f9a3c7e5b1d8f2a6c4e0b9d3f7a1c5e8b2d6f0a4c9e3b',
    databaseRequirements: { engine: 'mysql', minVersion: '8.4', minStorageGb: 10 },
    memoryFloorMb: 1024,
    isDefault: false,
    upgradePredecessors: ['6.2.1'],
  },
]);

export function findRuntime(version: string): RuntimeOption | undefined {
  return RUNTIME_CATALOG.find((r) => r.version === version);
}

export function defaultRuntime(): RuntimeOption {
  const d = RUNTIME_CATALOG.find((r) => r.isDefault);
  if (!d) throw new Error('runtime catalog has no default');
  return d;
}

/** True when the catalog has an edge from `from` straight to `to`. */
export function isUpgradeEdge(from: string, to: string): boolean {
  return findRuntime(to)?.upgradePredecessors.includes(from) ?? false;
}

/** Versions a site on `from` may upgrade to in one step. */
export function upgradeTargets(from: string): string[] {
  return RUNTIME_CATALOG.filter((r) => r.upgradePredecessors.includes(from)).map((r) => r.version);
}

/** The catalog's versions: the REST rows' enum for `runtime_version` and `target_version`. */
export const RUNTIME_VERSIONS = RUNTIME_CATALOG.map((r) => r.version) as [string, ...string[]];
