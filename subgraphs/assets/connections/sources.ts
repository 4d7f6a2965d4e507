import http from 'node:http';
import type { Readable } from 'node:stream';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { z } from 'zod';
import { PlatformError } from '../../../core/errors';
import { type CheckedTarget, type UrlRefusals, checkUrlShape, requestPinned, resolveTarget } from '../../../core/outbound-http';
import type { HttpConfig, S3Config } from './config';
import { safeAgents } from './safe-agents';

/** One object a source offers. `etag`/`sha256` are what the source states, checked after the copy. */
export interface SourceObject {
  key: string;
  size: number | null;
  /** S3 ETag without quotes (an MD5 of the bytes unless it holds a `-`: a multipart upload). */
  etag: string | null;
  /** Hex SHA-256 an HTTP manifest states. */
  sha256: string | null;
  /** HTTP sources: the object's address relative to `base_url` (default: the key). */
  url?: string | null;
}

export interface SourcePage {
  objects: SourceObject[];
  /** Opaque continuation, null at the end. */
  next: string | null;
}

/** An external store Assets copies from (connections of type `s3` or `http`). */
export interface MigrationSource {
  /** Reaches the source now; throws 422 `assets.connection_unreachable` (or 400 for an unsafe address). */
  verify(): Promise<void>;
  list(cursor: string | null): Promise<SourcePage>;
  open(obj: SourceObject): Promise<Readable>;
  close(): void;
}

export const URL_REFUSALS: UrlRefusals = { invalid: 'assets.invalid_url', unsafe: 'assets.unsafe_url' };
/** Objects an HTTP manifest may list. */
export const MANIFEST_MAX_OBJECTS = 100_000;
/** Largest manifest read, in bytes (16 MiB). */
export const MANIFEST_MAX_BYTES = 16 * 1024 * 1024;

export const unreachable = (message: string, details: Record<string, unknown> = {}) =>
  new PlatformError('assets.connection_unreachable', 422, message, details);

/** Error text safe to show and store: the SDK's or the socket's message, never a credential. */
const describe = (e: unknown) => {
  const err = e as { name?: string; message?: string; code?: string };
  return (err.code === 'EUNSAFEADDRESS' ? (err.message ?? '') : `${err.name ?? 'Error'}: ${err.message ?? ''}`).slice(0, 300);
};

export interface SourceOptions {
  allowHosts: Set<string>;
  timeoutMs: number;
}

/** An S3-compatible bucket through the official SDK, connecting only where the outbound rules allow. */
export class S3Source implements MigrationSource {
  private readonly client: S3Client;

  constructor(
    private readonly cfg: S3Config,
    secretAccessKey: string | null,
    opts: SourceOptions,
  ) {
    if (cfg.endpoint) checkUrlShape(cfg.endpoint, opts.allowHosts, URL_REFUSALS);
    const agents = safeAgents(opts.allowHosts);
    this.client = new S3Client({
      endpoint: cfg.endpoint,
      region: cfg.region,
      forcePathStyle: Boolean(cfg.endpoint),
      // No keys → anonymous requests: never the platform's own credential chain.
      ...(cfg.access_key_id && secretAccessKey
        ? { credentials: { accessKeyId: cfg.access_key_id, secretAccessKey } }
        : { signer: { sign: async (req) => req } }),
      requestHandler: { ...agents, requestTimeout: opts.timeoutMs, connectionTimeout: opts.timeoutMs },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 2,
    });
  }

  async verify(): Promise<void> {
    try {
      // One ordinary page (not MaxKeys 1: the s3rver stand-in cannot make continuation tokens on Node 20).
      await this.client.send(new ListObjectsV2Command({ Bucket: this.cfg.bucket, Prefix: this.cfg.prefix || undefined }));
    } catch (e) {
      throw unreachable(`the S3 source did not answer the listing: ${describe(e)}`);
    }
  }

  async list(cursor: string | null): Promise<SourcePage> {
    try {
      const r = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.cfg.bucket,
          Prefix: this.cfg.prefix || undefined,
          ContinuationToken: cursor ?? undefined,
          MaxKeys: 1000,
        }),
      );
      return {
        objects: (r.Contents ?? [])
          .filter((o) => o.Key && !o.Key.endsWith('/'))
          .map((o) => ({ key: o.Key!, size: o.Size ?? null, etag: o.ETag?.replace(/"/g, '') ?? null, sha256: null })),
        next: r.IsTruncated ? (r.NextContinuationToken ?? null) : null,
      };
    } catch (e) {
      throw unreachable(`the S3 source did not answer the listing: ${describe(e)}`);
    }
  }

  async open(obj: SourceObject): Promise<Readable> {
    try {
      const r = await this.client.send(new GetObjectCommand({ Bucket: this.cfg.bucket, Key: obj.key }));
      return r.Body as Readable;
    } catch (e) {
      throw unreachable(`the S3 source did not return ${obj.key}: ${describe(e)}`);
    }
  }

  close(): void {
    this.client.destroy();
  }
}

const manifestSchema = z.object({
  objects: z
    .array(
      z.object({
        key: z.string().min(1).max(1024),
        url: z.string().min(1).max(2048).optional(),
        size: z.number().int().min(0).optional(),
        sha256: z
          .string()
          .regex(/^[0-9a-fA-F]{64}$/)
          .optional(),
      }),
    )
    .max(MANIFEST_MAX_OBJECTS),
});

/**
 * An HTTP origin that lists its objects in a JSON manifest (`{"objects": [{"key", "url"?, "size"?,
 * "sha256"?}]}`). Every address (manifest and objects) passes the kernel's outbound rules and is
 * reached at its checked, pinned address; redirects are not followed.
 */
export class HttpSource implements MigrationSource {
  private readonly base: URL;

  constructor(
    private readonly cfg: HttpConfig,
    private readonly bearerToken: string | null,
    private readonly opts: SourceOptions,
  ) {
    const raw = cfg.base_url.endsWith('/') ? cfg.base_url : `${cfg.base_url}/`;
    this.base = checkUrlShape(raw, opts.allowHosts, URL_REFUSALS);
  }

  private async get(raw: string): Promise<http.IncomingMessage> {
    const target = await resolveTarget(raw, this.opts.allowHosts, { refusals: URL_REFUSALS });
    if (!target) throw unreachable(`${raw} does not resolve`);
    // The token is the source's: only its own origin gets it, never a host a manifest names.
    const own = target.url.origin === this.base.origin;
    const res = await getPinned(
      target,
      this.bearerToken && own ? { authorization: `Bearer ${this.bearerToken}` } : {},
      this.opts.timeoutMs,
    );
    if (res.statusCode !== 200) {
      res.resume();
      throw unreachable(`${target.url.pathname} answered HTTP ${res.statusCode}`, { status_code: res.statusCode });
    }
    return res;
  }

  private async manifest(): Promise<SourceObject[]> {
    const started = Date.now();
    const res = await this.get(new URL(this.cfg.manifest_path, this.base).toString());
    const chunks: Buffer[] = [];
    let size = 0;
    // The whole manifest within the timeout (a source dripping bytes never resets it).
    const left = Math.max(1, this.opts.timeoutMs - (Date.now() - started));
    const deadline = setTimeout(
      () => res.destroy(unreachable(`the manifest was not read within ${this.opts.timeoutMs} ms`)),
      left,
    );
    try {
      for await (const c of res as AsyncIterable<Buffer>) {
        size += c.length;
        if (size > MANIFEST_MAX_BYTES) {
          res.destroy();
          throw unreachable(`the manifest is larger than ${MANIFEST_MAX_BYTES} bytes`);
        }
        chunks.push(c);
      }
    } catch (e) {
      throw e instanceof PlatformError ? e : unreachable(`the manifest could not be read: ${describe(e)}`);
    } finally {
      clearTimeout(deadline);
    }
    let parsed: z.infer<typeof manifestSchema>;
    try {
      parsed = manifestSchema.parse(JSON.parse(Buffer.concat(chunks).toString('utf8')));
    } catch {
      throw unreachable('the manifest is not JSON of the form {"objects": [{"key", "url"?, "size"?, "sha256"?}]}');
    }
    return parsed.objects.map((o) => ({
      key: o.key.replace(/^\/+/, ''),
      size: o.size ?? null,
      etag: null,
      sha256: o.sha256?.toLowerCase() ?? null,
      url: o.url ?? null,
    }));
  }

  async verify(): Promise<void> {
    await this.manifest();
  }

  async list(): Promise<SourcePage> {
    return { objects: await this.manifest(), next: null };
  }

  async open(obj: SourceObject): Promise<Readable> {
    const where = new URL(obj.url ?? obj.key.split('/').map(encodeURIComponent).join('/'), this.base);
    return this.get(where.toString());
  }

  close(): void {}
}

/** A GET to a checked target, connecting only to its pinned address; never follows a redirect. */
function getPinned(target: CheckedTarget, headers: Record<string, string>, timeoutMs: number): Promise<http.IncomingMessage> {
  const { url } = target;
  return new Promise((resolve, reject) => {
    const req = requestPinned(target, { method: 'GET', headers, timeout: timeoutMs }, (res) => resolve(res));
    // Idle sockets time out, and so does the answer as a whole: its headers within `timeoutMs`
    // however slowly a source drips them (bodies keep the idle timeout; the step has its deadline).
    const total = setTimeout(() => req.destroy(unreachable(`${url.pathname} did not answer within ${timeoutMs} ms`)), timeoutMs);
    req.on('response', () => clearTimeout(total));
    req.on('close', () => clearTimeout(total));
    req.on('timeout', () => req.destroy(unreachable(`${url.pathname} did not answer within ${timeoutMs} ms`)));
    req.on('error', (e) => reject(e instanceof PlatformError ? e : unreachable(`${url.host}: ${describe(e)}`)));
    req.end();
  });
}
