import type { PublisherModels, RecoveryPointDoc, SiteDoc } from './model';
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

/**
 * Real releases of the publishing software (Ghost) from the npm registry, all running on Node 20
 * (`engines: ^18.12.1 || ^20.11.1 || ^22.13.1`): `image` names the package, `digest` is the
 * registry's `dist.integrity` of its tarball, checked before the runtime cache unpacks it
 * (dataplane/runtime-cache.ts; docs/decisions/0120-data-plane.md). Ghost 6 needs Node 22: not
 * offered until a runtime carries its own Node.
 */
export const RUNTIME_CATALOG: readonly RuntimeOption[] = Object.freeze([
  {
    version: '5.120.3',
    label: 'Ghost 5.120 (maintenance)',
    image: 'npm:ghost@5.120.3',
    digest: 'sha512-iMk5Zl3uLwUU6ldneoxw97iOEo+A8+binaN5A5F1B+4KyGZdaJpY6bukWHxhGkFWPYswtnQ36cPPCJ1xWIFv8A==',
    databaseRequirements: { engine: 'mysql', minVersion: '8.0', minStorageGb: 5 },
    memoryFloorMb: 512,
    isDefault: false,
    upgradePredecessors: [],
  },
  {
    version: '5.126.0',
    label: 'Ghost 5.126',
    image: 'npm:ghost@5.126.0',
    digest: 'sha512-dxEa1+DzRe2M3W9OySe6VchtkeosYL/d0R4uGJk9BCrTmUjamOVXjMl0+8kih4I9knOZzG8mk+W4EDTbfNhECA==',
    databaseRequirements: { engine: 'mysql', minVersion: '8.0', minStorageGb: 5 },
    memoryFloorMb: 512,
    isDefault: false,
    upgradePredecessors: ['5.120.3'],
  },
  {
    version: '5.130.5',
    label: 'Ghost 5.130 (recommended)',
    image: 'npm:ghost@5.130.5',
    digest: 'sha512-s1jsT18VMeBwgfdFuNRwAbM1TPYz/9ZXATjdPUJ5dVPVY9TbatWMC0TGS5fdFyFn5Q/opacxsrMtpUl7HLrrfQ==',
    databaseRequirements: { engine: 'mysql', minVersion: '8.0', minStorageGb: 10 },
    memoryFloorMb: 512,
    isDefault: true,
    upgradePredecessors: ['5.120.3', '5.126.0'],
  },
  {
    version: '5.130.6',
    label: 'Ghost 5.130.6',
    image: 'npm:ghost@5.130.6',
    digest: 'sha512-CAWqPKt+7ws+/1NrVmvuiWiDZDEtutiu7niVMTku9uM29MjfNFFUVKM3giQBpZGZrUORXkWiXSlqbry4QGVrBw==',
    databaseRequirements: { engine: 'mysql', minVersion: '8.4', minStorageGb: 10 },
    memoryFloorMb: 1024,
    isDefault: false,
    upgradePredecessors: ['5.130.5'],
  },
]);

/** The runtime cache's spec of a catalog entry (`npm:<name>@<version>`). */
export function runtimeSpec(r: RuntimeOption): { name: string; version: string; integrity: string; memoryFloorMb: number } {
  const m = /^npm:(.+)@([^@]+)$/.exec(r.image);
  if (!m) throw new Error(`runtime ${r.version}: image ${r.image} is not npm:<name>@<version>`);
  return { name: m[1], version: m[2], integrity: r.digest, memoryFloorMb: r.memoryFloorMb };
}

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

/**
 * The release a step of a site's operation runs: an upgrade's target (its origin for `rollback`), a
 * restore's recovery point, else the site's own. One rule for the hosted executor and node tasks.
 */
export async function stepRelease(
  models: Pick<PublisherModels, 'RecoveryPoint'>,
  operationType: string,
  step: string,
  site: SiteDoc,
  input: unknown,
): Promise<string> {
  const i = (input ?? {}) as { targetVersion?: string; fromVersion?: string; recoveryPointId?: string };
  if (operationType === 'upgrade')
    return step === 'rollback' ? (i.fromVersion ?? site.runtimeVersion) : (i.targetVersion ?? site.runtimeVersion);
  if (operationType === 'restore' && i.recoveryPointId) {
    const point: RecoveryPointDoc | null = await models.RecoveryPoint.findById(i.recoveryPointId).lean();
    if (point) return point.runtimeVersion;
  }
  return site.runtimeVersion;
}
