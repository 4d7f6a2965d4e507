import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { badRequest, notFound } from '../../../core/errors';
import type { Principal } from '../../../core/principal';
import type { StagedBlob } from '../../../core/blobs/blob-store';
import type { AssetAccess } from './asset-access';
import type { UploadSessions } from './sessions';
import { parseUploadFields, type ReadAhead } from './uploads';
import { etagOf } from '../revisions';
import { type AssetDoc, assetView } from '../records';
import { noteAccessKey, ASSETS_PREFIX, type Authenticate, sendError } from '../planes';

/**
 * What the upload byte path (plane.ts) needs of Assets: the access above, the upload sessions, and
 * dropping an asset from the delivery cache once a replace lands. `AssetsService` gives it.
 */
export interface UploadHost extends AssetAccess {
  readonly sessions: UploadSessions;
  forget(assetId: string): void;
}

/** Text fields of a form, each at most 64 KiB; a form holds at most 32 of them and exactly one file. */
const FIELD_LIMITS = { fieldSize: 64 * 1024, fields: 32, files: 1, parts: 40 };

/**
 * The multipart parser's own refusals of a body that is not a well-formed form — busboy's "Unexpected
 * end of multipart data" (a body that ends inside a part's headers or before the closing boundary),
 * a part "terminated early due to unexpected end of multipart data", "Boundary not found" — as the
 * client's 400. They reach `readForm` as plain errors, from the part iterator or from the file stream
 * being staged; anything else (a store that failed) stays a 500.
 */
function malformedForm(e: unknown) {
  const plain = e instanceof Error && Object.getPrototypeOf(e) === Error.prototype && !('code' in e);
  if (!plain || !/multipart data|boundary not found/i.test(e.message)) return null;
  return badRequest('validation_failed', `the multipart body is malformed: ${e.message}`);
}

export interface ReadForm {
  staged: StagedBlob | null;
  /**
   * Quota bytes this form's file holds (decision 0140): taken before the first byte, settled to the
   * file's size once staged. The caller hands them to the asset (`{reserved: true}`) or gives them
   * back (`releaseForm`) when the upload fails.
   */
  held: number;
  /** The hold while it is in flight beside the first bytes (decision 0255): the bytes it will hold. */
  holding?: Promise<number>;
  fileName: string | undefined;
  fields: Record<string, string>;
  /** What the request read before the last byte, for the record's step (`readForm`'s `ahead`). */
  read: ReadAhead;
  /**
   * With `ahead`: the hold settling to the file's size while the record is written (resolves to
   * the bytes then held). `releaseForm` waits for it; `keepForm` hands the hold to the asset.
   */
  settling?: Promise<number>;
}

/**
 * Reads a multipart form part by part: the file streams into a staged blob as it arrives (never
 * buffered whole), text fields are collected, whichever order they come in.
 *
 * `ahead` (decision 0240): the bucket is looked up while the file streams, the policy the hold read
 * is kept for the content check, and the hold settles beside the record's commands instead of
 * before them, so fewer MongoDB round trips wait after the last byte. The caller then passes
 * `form.read` to `create`/`replace` and ends with `keepForm` (stored) or `releaseForm` (refused).
 */
export async function readForm(
  req: FastifyRequest,
  assets: UploadHost,
  principal: Principal,
  opts: { ahead?: { bucket: boolean } } = {},
): Promise<ReadForm> {
  const form: ReadForm = { staged: null, held: 0, fileName: undefined, fields: {}, read: {} };
  // Without a boundary the parser cannot start (it would throw a 500): a malformed request, 400.
  if (!/;\s*boundary=/i.test(req.headers['content-type'] ?? '')) {
    throw badRequest('validation_failed', 'multipart/form-data needs a boundary parameter');
  }
  // Quota is reserved before the first byte is stored (402 at once when it does not fit): the
  // declared length bounds the file, else what is left of the quota (decision 0140). The hold's
  // commands run while the form's first bytes are parsed and buffered (decision 0255): no byte
  // reaches the staged file before it is taken, and its refusal ends the request at once.
  const length = /^\d+$/.test(req.headers['content-length'] ?? '') ? Number(req.headers['content-length']) : undefined;
  const holding = assets.uploads.holdWithPolicy(principal, length);
  form.holding = holding.then((h) => h.held);
  form.holding.catch(() => undefined);
  const refused = holding.then(() => new Promise<never>(() => undefined));
  refused.catch(() => undefined);
  const taken = async () => {
    const hold = await holding;
    if (form.holding) {
      form.held = hold.held;
      form.holding = undefined;
    }
    if (opts.ahead) form.read.policy = hold.policy;
  };
  try {
    const parts = req.parts({ limits: FIELD_LIMITS })[Symbol.asyncIterator]();
    for (;;) {
      const next = await Promise.race([parts.next(), refused]);
      if (next.done) break;
      const part = next.value;
      if (part.type === 'file') {
        if (part.fieldname !== 'file') throw badRequest('validation_failed', `unexpected file field ${part.fieldname}`);
        form.fileName = part.filename;
        if (opts.ahead?.bucket) form.read.bucket = assets.uploads.lookAheadBucket(principal.accountId, form.fields.bucket);
        form.staged = await assets.uploads.stage(principal.accountId, part.file, {
          plan: principal.plan,
          held: form.holding ?? form.held,
        });
        await taken();
        if (opts.ahead) {
          const size = form.staged.size;
          form.settling = assets.uploads.settle(principal.accountId, form.held, size);
          // Not awaited here: a rejection is seen by `keepForm` or `releaseForm`.
          form.settling.catch(() => undefined);
        } else {
          form.held = await assets.uploads.settle(principal.accountId, form.held, form.staged.size);
        }
        if (part.file.truncated) throw badRequest('validation_failed', 'file was truncated');
      } else {
        if (typeof part.value !== 'string') throw badRequest('validation_failed', `field ${part.fieldname} must be text`);
        form.fields[part.fieldname] = part.value;
      }
    }
    await taken();
  } catch (e) {
    await releaseForm(assets, principal, form);
    throw malformedForm(e) ?? e;
  }
  if (!form.staged) {
    await releaseForm(assets, principal, form);
    throw badRequest('validation_failed', 'the form has no file field');
  }
  return form;
}

/** A refused form: its staged bytes and its quota hold go back (idempotent). */
export async function releaseForm(assets: UploadHost, principal: Principal, form: ReadForm): Promise<void> {
  let held = form.held;
  const settling = form.settling;
  const holding = form.holding;
  form.held = 0;
  form.settling = undefined;
  form.holding = undefined;
  // A hold still in flight: whatever it takes goes back (nothing when it was refused).
  if (holding) held = await holding.catch(() => 0);
  // What is held is the file's size once the settle landed, else still the whole hold.
  if (settling) held = await settling.catch(() => held);
  if (form.staged) await assets.blobs.discard(form.staged).catch(() => undefined);
  await assets.uploads.release(principal.accountId, held);
}

/**
 * A stored form: its hold is the asset's bytes now. Waits for the settle that ran beside the
 * record; if it failed, it is tried once more, and then only logged (the account keeps the
 * multipart framing's few hundred bytes counted: the asset is stored and must not be given back).
 */
export async function keepForm(
  assets: UploadHost,
  principal: Principal,
  form: ReadForm,
  log: FastifyRequest['log'],
): Promise<void> {
  const held = form.held;
  const settling = form.settling;
  form.held = 0;
  form.settling = undefined;
  if (!settling || !form.staged) return;
  const size = form.staged.size;
  await settling.catch(() =>
    assets.uploads.settle(principal.accountId, held, size).catch((e: unknown) => {
      log.error({ err: e, bytes: held - size }, 'an upload hold was not settled to its file size');
      return size;
    }),
  );
}

/**
 * The upload byte path on the bridge listener: `POST /upload` and `PUT /{id}/replace`. Registered
 * by the composition root in its own encapsulated scope, so its multipart parser touches nothing
 * else on the listener.
 */
export async function assetsUploadPlane(app: FastifyInstance, assets: UploadHost, authenticate: Authenticate): Promise<void> {
  // Raw-byte session routes in their own scope (no body parsers but a pass-through).
  await app.register(async (scope) => assetsSessionPlane(scope, assets));
  // No size cap here: the content policy caps the stream while it is staged.
  await app.register(multipart, { limits: { fileSize: Number.MAX_SAFE_INTEGER } });

  const handle =
    (
      run: (p: Principal, form: ReadForm, req: FastifyRequest) => Promise<AssetDoc>,
      status: number,
      /** Whether the form's bucket is looked up while the file streams (a replace keeps its asset's). */
      bucket: boolean,
    ) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      let form: ReadForm | null = null;
      let principal: Principal | null = null;
      try {
        principal = assets.writer(await authenticate(req));
        noteAccessKey(req, principal.keyId);
        if (!req.isMultipart()) throw badRequest('validation_failed', 'expected a multipart/form-data body');
        form = await readForm(req, assets, principal, { ahead: { bucket } });
        const asset = await run(principal, form, req);
        // The hold is the asset's bytes now.
        await keepForm(assets, principal, form, req.log);
        assets.forget(asset._id);
        assets.nudge();
        reply.header('ETag', etagOf(asset.revision));
        return reply.status(status).send({ success: true, data: assetView(asset, assets.cfg.cdnUrl) });
      } catch (e) {
        // Nothing stays behind a refusal: the staged bytes and the quota hold go before the answer does.
        if (form && principal) await releaseForm(assets, principal, form).catch(() => undefined);
        // What the client still sends is drained by the bridge after this answer (rest-bridge/lingering-close.ts).
        return sendError(reply, e, req.log);
      }
    };

  app.post(
    `${ASSETS_PREFIX}/upload`,
    handle(
      async (p, form) => {
        const asset = await assets.uploads.create(p, form.staged as StagedBlob, form.fileName, parseUploadFields(form.fields), {
          reserved: true,
          read: form.read,
        });
        return asset;
      },
      201,
      true,
    ),
  );

  // Browser uploads (`/assets/widget`, with CORS) are in widget/widget-plane.ts.

  app.put<{ Params: { id: string } }>(
    `${ASSETS_PREFIX}/:id/replace`,
    handle(
      async (p, form, req) => {
        const ifMatch = req.headers['if-match'];
        const { id } = req.params as { id: string };
        const fields = parseUploadFields(form.fields);
        for (const k of ['bucket', 'key', 'folder', 'visibility', 'cache_control', 'metadata', 'tags'] as const) {
          if (fields[k] !== undefined) throw badRequest('validation_failed', `${k} cannot be changed by replace (use PATCH)`);
        }
        return assets.uploads.replace(p, id, ifMatch, form.staged as StagedBlob, form.fileName, fields, {
          reserved: true,
          read: form.read,
        });
      },
      200,
      false,
    ),
  );
}

/**
 * The session byte routes: `PUT {url}` (single) and `PUT {url}/parts/{n}` (chunked, with
 * `X-Content-SHA256`). The capability in the path authorises them. Bodies are raw bytes of any
 * content type, streamed to the blob store unparsed.
 */
export async function assetsSessionPlane(app: FastifyInstance, assets: UploadHost): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, payload, done) => done(null, payload));
  const capabilityRefused = () => notFound('assets.upload_session_not_found', 'upload session not found');

  app.put<{ Params: { cap: string } }>(`${ASSETS_PREFIX}/uploads/:cap`, async (req, reply) => {
    try {
      const s = await assets.sessions.byCapability(req.params.cap);
      if (!s) throw capabilityRefused();
      const asset = await assets.sessions.putSingle(s, req.body as Readable);
      reply.header('ETag', etagOf(asset.revision));
      return reply.status(201).send({ success: true, data: assetView(asset, assets.cfg.cdnUrl) });
    } catch (e) {
      return sendError(reply, e, req.log);
    }
  });

  app.put<{ Params: { cap: string; n: string } }>(`${ASSETS_PREFIX}/uploads/:cap/parts/:n`, async (req, reply) => {
    try {
      const s = await assets.sessions.byCapability(req.params.cap);
      if (!s) throw capabilityRefused();
      const n = Number(req.params.n);
      if (!Number.isInteger(n)) throw badRequest('validation_failed', 'part number must be an integer');
      const sha = req.headers['x-content-sha256'];
      const updated = await assets.sessions.putPart(s, n, Array.isArray(sha) ? sha[0] : sha, req.body as Readable);
      const part = updated.parts.find((x) => x.number === n);
      return reply.status(200).send({
        success: true,
        data: {
          upload_session_id: s._id,
          part_number: n,
          size: part?.size,
          checksum_sha256: part?.sha256,
          received_parts: updated.parts.length,
        },
      });
    } catch (e) {
      return sendError(reply, e, req.log);
    }
  });
}
