import type { FastifyInstance } from 'fastify';
import { Webhook } from 'standardwebhooks';
import { PlatformError, badRequest, notFound } from '../../../core/errors';
import { decryptSecret } from '../../../core/secrets';
import { derivedId } from './ids';
import type { HookDoc, WorkflowDoc } from './model';
import type { WorkflowService } from './service';
import { ASSETS_PREFIX, sendError } from '../planes';

/**
 * `POST {base_url}/api/v1/assets/workflow-hooks/{token}` (spec 4.3, 5.8): the public receiver that
 * starts a run of a `hook` workflow. No bearer key: the path token finds the workflow, and a
 * Standard Webhooks signature (docs/contracts.md) over the exact raw body proves the sender holds the
 * workflow's secret. It is raw HTTP (the area's data plane) because the signature covers the bytes
 * as sent, before any JSON parsing.
 */
export const HOOK_PATH = `${ASSETS_PREFIX}/workflow-hooks/:token`;
/** Standard Webhooks headers: `webhook-id` is the delivery id, the timestamp is Unix seconds. */
export const HOOK_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;
/** A timestamp further than this from our clock, either way, is refused: 5 minutes (the package's own). */
export const HOOK_TOLERANCE_S = 300;
/** Largest accepted body: 256 KiB. */
export const HOOK_BODY_LIMIT = 256 * 1024;

const unauthorised = (code: string, message: string) => new PlatformError(code, 401, message);
const hookNotFound = () => notFound('assets.hook_not_found', 'workflow hook not found');

export async function assetsWorkflowHookPlane(app: FastifyInstance, workflows: WorkflowService): Promise<void> {
  // Keep the body as the exact bytes sent (this scope only): the signature is over them.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: HOOK_BODY_LIMIT }, (_req, body, done) => done(null, body));

  app.post<{ Params: { token: string } }>(HOOK_PATH, { bodyLimit: HOOK_BODY_LIMIT }, async (req, reply) => {
    try {
      const m = workflows.d.models;
      const token = req.params.token;
      const hook = /^[A-Za-z0-9_-]{16,64}$/.test(token) ? await m.Hook.findById(token).lean<HookDoc>().exec() : null;
      if (!hook) throw hookNotFound();
      const header = (name: string) => {
        const v = req.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      const id = header(HOOK_HEADERS.id);
      const ts = header(HOOK_HEADERS.timestamp);
      const sig = header(HOOK_HEADERS.signature);
      if (!id || !ts || !sig) {
        throw unauthorised('assets.hook_signature_missing', 'webhook-id, webhook-timestamp and webhook-signature are required');
      }
      if (id.length > 128) throw badRequest('validation_failed', 'webhook-id is longer than 128 characters');
      const seconds = /^\d{1,12}$/.test(ts) ? Number(ts) : NaN;
      if (!Number.isFinite(seconds) || Math.abs(Date.now() / 1000 - seconds) > HOOK_TOLERANCE_S) {
        throw unauthorised(
          'assets.hook_timestamp_out_of_tolerance',
          `webhook-timestamp must be within ${HOOK_TOLERANCE_S} s of now`,
        );
      }
      const raw = typeof req.body === 'string' ? req.body : '';
      const secret = decryptSecret(hook.secretSealed, `asset_workflow_hook:${hook._id}`);
      try {
        new Webhook(secret).verify(raw, { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': sig });
      } catch {
        throw unauthorised('assets.hook_signature_invalid', 'the signature does not match the body');
      }
      const wf = await m.Workflow.findOne({ _id: hook.workflowId, accountId: hook.accountId }).lean<WorkflowDoc>().exec();
      if (!wf) throw hookNotFound();
      // A hook run acts with the activating key's authority: not once that key is revoked (decision 0099).
      if (!(await workflows.d.assets.keyLive(hook.actor.accountId, hook.actor.keyId))) {
        throw new PlatformError(
          'assets.hook_actor_revoked',
          403,
          'the key that activated this workflow was revoked; activate it with a live key',
        );
      }
      if (wf.status !== 'active' || !wf.activeVersion) {
        throw new PlatformError('assets.workflow_not_active', 409, 'the workflow is not active');
      }
      let body: Record<string, unknown> = {};
      if (raw.trim() !== '') {
        try {
          const parsed: unknown = JSON.parse(raw);
          if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
          body = parsed as Record<string, unknown>;
        } catch {
          throw badRequest('validation_failed', 'the body must be a JSON object');
        }
      }
      const assetId = typeof body.asset_id === 'string' ? body.asset_id : null;
      // The run id is fixed by the delivery id: a replayed delivery is a duplicate run (409).
      const run = await workflows.startRun(
        wf,
        hook.actor,
        { assetId, payload: body },
        { type: 'hook', keyId: null, deliveryId: id },
        derivedId(`assets.workflow_hook:${wf._id}:${id}`),
      );
      return reply.status(202).send({
        success: true,
        data: { run_id: run._id, job_id: run._id, status: run.status, status_url: `${ASSETS_PREFIX}/jobs/${run._id}` },
      });
    } catch (e) {
      return sendError(reply, e, req.log);
    }
  });
}
