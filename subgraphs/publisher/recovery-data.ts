import type { Model } from 'mongoose';
import { PlatformError } from '../../core/errors';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import type { AgentPart, AgentReleaseManifest, SiteDataWork } from '../../dataplane/agent/wire';
import type { CaptureDoc, PublisherModels, RecoveryPointDoc, SiteDoc } from './model';
import { findRuntime, runtimeSpec } from './runtime-catalog';
import type { SiteCredentialsDoc } from './site-credentials';
import type { StepOutput } from './simulated-infrastructure';

/**
 * The platform's side of a hosted site's data steps (docs/decisions/0360-data-steps-on-the-node.md,
 * 0150-recovery-point-bytes.md). The steps run on the hosted node, as tasks its agent runs with the
 * site's runtime driver and the recovery store (dataplane/agent/data-executor.ts); here is only
 * what a step asks for — the point's sealed parts, the release to seal or pin, the integration a
 * staging copy re-keys — and what the platform keeps of the answer: a capture's part for the
 * point's record, a copy's new access sealed under its own id.
 */

export interface RecoveryDataDeps {
  models: PublisherModels;
  credentials: Model<SiteCredentialsDoc>;
  aad: (siteId: string, field: string) => string;
}

export class RecoveryData {
  constructor(private readonly d: RecoveryDataDeps) {}

  /** What the step's task asks the node for. */
  async work(operationType: string, step: string, site: SiteDoc, input: unknown): Promise<SiteDataWork> {
    switch (step) {
      case 'capture_release':
        // A capture seals the release the site runs now (an upgrade captures before it changes it).
        return { release: manifest(site.runtimeVersion) };
      case 'restore_database': {
        const point = await this.point(input);
        const work: SiteDataWork = { point: { database: part(point, 'database') } };
        if (operationType !== 'staging') return work;
        const source = await this.d.credentials.findById(point.projectId).lean();
        if (!source) throw new PlatformError('site_setup_failed', 500, 'the source site has no platform integration to copy');
        return { ...work, rekey: { integrationId: source.integrationId } };
      }
      case 'restore_content':
        return { point: { content: part(await this.point(input), 'content') } };
      case 'pin_release': {
        const point = await this.point(input);
        return { point: { release: part(point, 'release') }, release: manifest(point.runtimeVersion) };
      }
      case 'rollback': {
        const point = await this.point(input);
        return { point: { database: part(point, 'database'), content: part(point, 'content') } };
      }
      default:
        return {};
    }
  }

  /** What the platform keeps of the node's answer: a capture's part; a staging copy's access, sealed. */
  async settle(
    operationType: string,
    step: string,
    site: SiteDoc,
    input: unknown,
    result: Record<string, unknown> | null,
  ): Promise<StepOutput | void> {
    if (step.startsWith('capture_')) {
      // A simulated agent captures nothing: the point records a stand-in part, as the simulated executor's.
      if (!result) return;
      const sha256 = String(result?.sha256 ?? '');
      const sizeBytes = Number(result?.size_bytes);
      if (!/^[0-9a-f]{64}$/.test(sha256) || !Number.isInteger(sizeBytes))
        throw new PlatformError(`${step}_failed`, 500, 'the node answered no captured part');
      const snapshotId = step === 'capture_release' ? manifest(site.runtimeVersion).digest : sha256;
      return { captured: { snapshotId, sizeBytes, sha256 } };
    }
    if (step === 'restore_database' && operationType === 'staging' && result)
      await this.sealCopyAccess(site, await this.point(input), result);
  }

  /**
   * A staging copy's credentials, sealed under its own id: the new Admin API key its node's driver
   * put into the copied database, the source's owner and integration.
   */
  private async sealCopyAccess(copy: SiteDoc, point: RecoveryPointDoc, result: Record<string, unknown>): Promise<void> {
    const source = await this.d.credentials.findById(point.projectId).lean();
    if (!source || typeof result.admin_api_key !== 'string')
      throw new PlatformError('site_setup_failed', 500, 'the staging copy got no access of its own');
    const aad = this.d.aad;
    const ownerPassword = decryptSecret(source.ownerPasswordCiphertext, aad(source._id, 'owner_password'));
    await this.d.credentials.replaceOne(
      { _id: copy._id },
      {
        _id: copy._id,
        accountId: copy.accountId,
        ownerEmail: source.ownerEmail,
        integrationId: source.integrationId,
        adminApiKeyCiphertext: encryptSecret(result.admin_api_key, aad(copy._id, 'admin_api_key')),
        ownerPasswordCiphertext: encryptSecret(ownerPassword, aad(copy._id, 'owner_password')),
        createdAt: new Date(),
      },
      { upsert: true },
    );
  }

  private async point(input: unknown): Promise<RecoveryPointDoc> {
    const id = (input as { recoveryPointId?: string } | null)?.recoveryPointId;
    const point = id ? await this.d.models.RecoveryPoint.findById(id).lean() : null;
    if (!point) throw new PlatformError('recovery_point_not_found', 500, `recovery point ${id} not found`);
    return point;
  }
}

/** The catalog's release `version` as a recovery point seals it (name, version, image, registry digest). */
function manifest(version: string): AgentReleaseManifest {
  const r = findRuntime(version);
  if (!r) throw new PlatformError('release_unknown', 500, `runtime ${version} is not in the catalog`);
  return { name: runtimeSpec(r).name, version: r.version, image: r.image, digest: r.digest };
}

/** The sealed bytes of one part; a point captured by the simulated executor has none. */
function part(point: RecoveryPointDoc, name: 'database' | 'content' | 'release'): AgentPart {
  const c: CaptureDoc = point[name];
  if (point.status !== 'completed' || c.status !== 'captured' || !c.sha256 || c.sizeBytes === null)
    throw new PlatformError('recovery_point_incomplete', 500, `recovery point ${point._id} holds no ${name} bytes`);
  return { sha256: c.sha256, sizeBytes: c.sizeBytes };
}
