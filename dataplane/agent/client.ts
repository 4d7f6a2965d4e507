import { createWriteStream } from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { type AgentRangeRequest, isAgentUpload, NODE_AGENT_PATH, NODE_TOKEN_HEADER, uploadHeaders } from './wire';

/**
 * How an agent reaches the platform: HTTP to the bridge (a customer's machine), or, for the
 * platform's own hosted agent, a direct call of the same protocol in the same process
 * (nodes/hosted.ts). Answers the HTTP status and the JSON envelope, or, for a download (a release's
 * bundle), the bytes.
 */
export type AgentTransport = (
  method: 'GET' | 'POST',
  path: string,
  body: unknown,
  signal: AbortSignal,
) => Promise<{ status: number; body: unknown; bytes?: Readable }>;

/** The platform refused the token (forged, unknown or revoked): the agent stops. */
export class AgentAuthError extends Error {}

interface Envelope<T> {
  success: boolean;
  data?: T;
  error?: { code: string; message: string };
}

const JSON_TYPE = { 'content-type': 'application/json' };
/** How long a download (a release's bundle) or an upload (a recovery point's part) may take. */
const DOWNLOAD_TIMEOUT_MS = 10 * 60_000;

export interface AgentClientOptions {
  /** The platform's REST bridge. */
  apiUrl: string;
  token: string;
  /** Instead of HTTP to `apiUrl` (the hosted agent inside the platform). */
  transport?: AgentTransport;
  /** Aborted when the agent stops: its waits are cut short. */
  stopping: AbortSignal;
}

/** The agent's side of the protocol (docs/decisions/0170-node-agent.md): calls, a call's bytes, downloads. */
export class AgentClient {
  constructor(private readonly o: AgentClientOptions) {}

  /** Downloads a call's bytes (a release's bundle) into `file`; a refusal throws as `call` does. */
  async download(p: string, file: string): Promise<void> {
    const signal = this.transferSignal();
    await pipeline(await this.bytes(p, signal), createWriteStream(file), { signal });
  }

  /** A transfer's bound: its time, or the agent stopping. */
  transferSignal(): AbortSignal {
    return AbortSignal.any([AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS), this.o.stopping]);
  }

  /**
   * A call's bytes as a stream (a release's bundle, a recovery point's part); with `from`, the rest from
   * that byte (`Range: bytes=<from>-`, answered 206: a resumed part's download, decision 0390).
   */
  async bytes(p: string, signal: AbortSignal, from?: number): Promise<Readable> {
    const range: AgentRangeRequest | null = from ? { range: `bytes=${from}-` } : null;
    if (this.o.transport) {
      const out = await this.o.transport('GET', p, range, signal);
      if (out.bytes && (!range || out.status === 206)) return out.bytes;
      out.bytes?.destroy();
      return refused(out.status, out.body as Envelope<unknown> | null);
    }
    const r = await fetch(this.url(p), { headers: { [NODE_TOKEN_HEADER]: this.o.token, ...range }, signal });
    if (!r.ok || !r.body || (range && r.status !== 206) || (r.headers.get('content-type') ?? '').includes('json'))
      return refused(r.status, (await r.json().catch(() => null)) as Envelope<unknown> | null);
    return Readable.fromWeb(r.body as WebReadableStream<Uint8Array>);
  }

  private url(p: string): string {
    return `${this.o.apiUrl.replace(/\/+$/, '')}${NODE_AGENT_PATH}${p}`;
  }

  /** One protocol call; `waitMs` lengthens the 10 s timeout for a long-polled claim. */
  async call<T>(method: 'GET' | 'POST', p: string, body?: unknown, waitMs = 0): Promise<T> {
    // A stopping agent cuts its waits short, but still gives its lease up. An upload's bytes stream.
    const up = isAgentUpload(body) ? body : null;
    const timeout = AbortSignal.timeout(up ? DOWNLOAD_TIMEOUT_MS : 10_000 + waitMs);
    const signal = p === '/lease/release' ? timeout : AbortSignal.any([timeout, this.o.stopping]);
    let res: { status: number; ok: boolean; env: Envelope<T> | null };
    if (this.o.transport) {
      const out = await this.o.transport(method, p, body ?? null, signal);
      res = { status: out.status, ok: out.status < 400, env: out.body as Envelope<T> };
    } else {
      const r = await fetch(this.url(p), {
        method,
        // Not `Authorization`: the bridge reads that as an API key (nodes/agent-api.ts).
        headers: { [NODE_TOKEN_HEADER]: this.o.token, ...(up ? uploadHeaders(up) : body ? JSON_TYPE : {}) },
        ...(up
          ? { body: Readable.toWeb(up.stream) as ReadableStream, duplex: 'half' }
          : { body: body ? JSON.stringify(body) : undefined }),
        signal,
      });
      res = { status: r.status, ok: r.ok, env: (await r.json().catch(() => null)) as Envelope<T> | null };
    }
    const env = res.env;
    if (!res.ok || !env?.success) return refused(res.status, env);
    return env.data as T;
  }
}

/**
 * The platform did not answer the call with success: a refused token stops the agent
 * (AgentAuthError); otherwise an error with the answer's code and HTTP status.
 */
function refused(status: number, env: Envelope<unknown> | null): never {
  if (status === 401) throw new AgentAuthError('the platform refused the node token (unknown, forged or revoked)');
  throw Object.assign(new Error(env?.error?.message ?? `HTTP ${status}`), { code: env?.error?.code, status });
}
