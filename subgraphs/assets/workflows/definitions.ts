import { randomBytes } from 'node:crypto';
import { PlatformError, badRequest, conflict, notFound } from '../../../core/errors';
import { newId } from '../../../core/ids';
import { isDuplicateKey } from '../../../core/mongo';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';
import { encryptSecret } from '../../../core/secrets';
import { type Definition, definitionSchema, findings, normalised } from './catalog';
import type { WorkflowDoc, WorkflowModels, WorkflowVersionDoc } from './model';
import { MAX_PAGE, type Page, pageOf } from './paging';
import { requiredRevision, revisionStale } from '../revisions';

export const workflowNotFound = () => notFound('assets.workflow_not_found', 'workflow not found');

export interface DefinitionDeps {
  models: WorkflowModels;
  ports: Ports;
  /** The REST base (`{base_url}`) at call time: hook URLs are absolute. */
  baseUrl(): string;
  reader(p: Principal | null | undefined): Principal;
  writer(p: Principal | null | undefined): Principal;
}

/**
 * Workflows and their versions: drafts guarded by a revision, validation, publishing a draft as the
 * next immutable version, and activation (which gives a hook workflow its token and secret).
 */
export class WorkflowDefinitions {
  constructor(private readonly d: DefinitionDeps) {}

  async list(p: Principal | null, limit?: number, cursor?: string): Promise<Page<WorkflowDoc>> {
    const { accountId } = this.d.reader(p);
    return pageOf(this.d.models.Workflow, { accountId }, `workflows:${accountId}`, limit, cursor);
  }

  async get(p: Principal | null, id: string): Promise<WorkflowDoc> {
    const { accountId } = this.d.reader(p);
    const wf = await this.d.models.Workflow.findOne({ _id: id, accountId }).lean<WorkflowDoc>().exec();
    if (!wf) throw workflowNotFound();
    return wf;
  }

  async create(p: Principal | null, input: { name: string; projectId?: string | null; draft?: unknown }): Promise<WorkflowDoc> {
    const { accountId } = this.d.writer(p);
    if (input.projectId) {
      const project = await this.d.ports.get('projects').findProject(input.projectId);
      if (!project || project.accountId !== accountId) throw notFound('assets.project_not_found', 'project not found');
    }
    const now = new Date();
    const doc: WorkflowDoc = {
      _id: newId(),
      accountId,
      name: input.name,
      projectId: input.projectId ?? null,
      status: 'draft',
      draft: input.draft ? parseDraft(input.draft) : { trigger: { type: 'manual' }, steps: [] },
      revision: 1,
      latestVersion: 0,
      activeVersion: null,
      hook: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.d.models.Workflow.create(doc);
    return doc;
  }

  /** Replaces the draft; `If-Match` with the workflow's revision is required (428 / 412). */
  async saveDraft(p: Principal | null, id: string, ifMatch: string | null | undefined, draft: unknown): Promise<WorkflowDoc> {
    const { accountId } = this.d.writer(p);
    const revision = requiredRevision(ifMatch);
    const def = parseDraft(draft);
    const next = await this.d.models.Workflow.findOneAndUpdate(
      { _id: id, accountId, revision },
      { $set: { draft: def, updatedAt: new Date() }, $inc: { revision: 1 } },
      { new: true },
    )
      .lean<WorkflowDoc>()
      .exec();
    if (next) return next;
    const current = await this.get(p, id);
    throw revisionStale(current.revision);
  }

  async validate(p: Principal | null, id: string): Promise<{ valid: boolean; errors: { path: string; message: string }[] }> {
    const wf = await this.get(p, id);
    const errors = findings(wf.draft);
    return { valid: errors.length === 0, errors };
  }

  /** Freezes the draft as the next version; 400 with the findings when it is not valid. */
  async publish(p: Principal | null, id: string): Promise<WorkflowVersionDoc> {
    this.d.writer(p);
    for (;;) {
      const wf = await this.get(p, id);
      const errors = findings(wf.draft);
      if (errors.length) throw badRequest('assets.workflow_invalid', 'the draft does not validate', { errors });
      const version = wf.latestVersion + 1;
      // The version document is inserted first under `<id>:<n>`: its unique id decides between two
      // concurrent publishes, and it is never updated. Then the workflow's counter catches up (a
      // publish that died between the two leaves the counter behind; the next one moves it on).
      const doc: WorkflowVersionDoc = {
        _id: `${id}:${version}`,
        accountId: wf.accountId,
        workflowId: id,
        version,
        definition: normalised(wf.draft),
        createdAt: new Date(),
      };
      const bump = () =>
        this.d.models.Workflow.updateOne(
          { _id: id, accountId: wf.accountId, latestVersion: wf.latestVersion },
          { $set: { latestVersion: version, updatedAt: new Date() } },
        ).exec();
      try {
        await this.d.models.Version.create(doc);
      } catch (e) {
        if (!isDuplicateKey(e)) throw e;
        await bump();
        continue;
      }
      await bump();
      return doc;
    }
  }

  async versions(p: Principal | null, id: string): Promise<WorkflowVersionDoc[]> {
    const wf = await this.get(p, id);
    return this.d.models.Version.find({ accountId: wf.accountId, workflowId: id })
      .sort({ version: -1 })
      .limit(MAX_PAGE)
      .lean<WorkflowVersionDoc[]>()
      .exec();
  }

  async version(wf: WorkflowDoc, version: number): Promise<WorkflowVersionDoc> {
    const v = await this.d.models.Version.findOne({ _id: `${wf._id}:${version}`, accountId: wf.accountId })
      .lean<WorkflowVersionDoc>()
      .exec();
    if (!v) throw notFound('assets.workflow_version_not_found', `workflow version ${version} not found`);
    return v;
  }

  /**
   * Makes a published version the one runs and hooks use (default: the latest). A `hook` workflow
   * gets its token and signing secret on its first activation; the secret is returned that once.
   */
  async activate(
    p: Principal | null,
    id: string,
    version?: number | null,
  ): Promise<{ workflow: WorkflowDoc; secret: string | null }> {
    const actor = this.d.writer(p);
    const wf = await this.get(p, id);
    if (wf.latestVersion === 0) throw conflict('assets.workflow_not_published', 'publish a version before activating');
    const v = await this.version(wf, version ?? wf.latestVersion);
    let secret: string | null = null;
    const set: Partial<WorkflowDoc> = { status: 'active', activeVersion: v.version, updatedAt: new Date() };
    if (v.definition.trigger.type === 'hook' && !wf.hook) {
      const token = randomBytes(24).toString('base64url');
      secret = `whsec_${randomBytes(32).toString('base64')}`;
      await this.d.models.Hook.create({
        _id: token,
        accountId: wf.accountId,
        workflowId: wf._id,
        secretSealed: encryptSecret(secret, `asset_workflow_hook:${token}`),
        actor,
        createdAt: new Date(),
      });
      set.hook = { token, createdAt: new Date() };
    } else if (wf.hook) {
      // Hook runs act with the key that activated the workflow last (a revoked one is replaced so).
      await this.d.models.Hook.updateOne({ _id: wf.hook.token, accountId: wf.accountId }, { $set: { actor } });
    }
    // The hook is only set when none was (a concurrent first activation keeps the one that won).
    const filter = set.hook ? { _id: id, accountId: wf.accountId, hook: null } : { _id: id, accountId: wf.accountId };
    const next = await this.d.models.Workflow.findOneAndUpdate(filter, { $set: set }, { new: true }).lean<WorkflowDoc>().exec();
    if (!next) return this.activate(p, id, version);
    return { workflow: next, secret };
  }

  hookUrl(wf: WorkflowDoc): string | null {
    return wf.hook ? `${this.d.baseUrl()}/api/v1/assets/workflow-hooks/${wf.hook.token}` : null;
  }
}

/** The first object key, at any depth, that BSON cannot store (a NUL byte), or null. */
function unstorableKey(v: unknown): string | null {
  if (Array.isArray(v)) {
    for (const x of v) {
      const k = unstorableKey(x);
      if (k !== null) return k;
    }
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v)) {
      if (k.includes('\u0000')) return k;
      const inner = unstorableKey(x);
      if (inner !== null) return inner;
    }
  }
  return null;
}

function parseDraft(draft: unknown): Definition {
  // A well-formed draft whose step config has a key with a NUL byte cannot be stored (BSON refuses
  // it): a 422, not the 500 the encoder would give.
  const bad = unstorableKey(draft);
  if (bad !== null)
    throw new PlatformError('assets.unstorable_key', 422, 'step config keys must not contain NUL characters', {
      key: bad.split('\u0000').join('\\0').slice(0, 100),
    });
  const parsed = definitionSchema.safeParse(draft);
  if (!parsed.success) {
    throw badRequest('validation_failed', 'the draft is not a workflow definition', {
      issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
    });
  }
  return parsed.data as Definition;
}
