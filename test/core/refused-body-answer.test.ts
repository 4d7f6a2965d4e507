import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { LINGER_IDLE_MS } from '../../rest-bridge/lingering-close';
import { startTestPlatform, type TestPlatform } from '../support/platform';

const MiB = 1024 ** 2;
const A = '/api/v1/assets';
/** Requests per client and case. */
const ROUNDS = 5;

/**
 * A body refused while it arrives is answered, and the client reads the answer: the bridge drains
 * what the client still sends (up to a bound) before it closes, instead of closing on unread bytes
 * (which resets the connection and loses the answer). Checked with Node's stock `fetch` and with
 * `curl`, on the byte routes (an upload session's single PUT past its size, a multipart upload past
 * what the account may store) and on the JSON routes' body limit.
 */
describe('the bridge: an answer to a body refused while it arrives reaches the client', () => {
  let t: TestPlatform;
  let dir: string;
  let bigFile: string;
  const big = Buffer.alloc(3 * MiB, 7);
  beforeAll(async () => {
    t = await startTestPlatform({ ASSETS_QUOTA_BYTES_PRO: String(MiB) });
    dir = await mkdtemp(path.join(tmpdir(), 'refused-body-'));
    bigFile = path.join(dir, 'big.bin');
    await writeFile(bigFile, big);
  });
  afterAll(async () => {
    await t.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** `curl` sending `file`: the status and body it read (exit code 0: the answer arrived whole). */
  const curl = async (method: string, url: string, headers: Record<string, string>, file: string) => {
    const args = ['-sS', '--max-time', '15', '-X', method, '-o', '-', '-w', '\n%{http_code}', '--data-binary', `@${file}`];
    for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
    const { stdout } = await promisify(execFile)('curl', [...args, url], { maxBuffer: 4 * MiB });
    const at = stdout.lastIndexOf('\n');
    return { status: Number(stdout.slice(at + 1)), body: JSON.parse(stdout.slice(0, at)) };
  };
  /** Node's stock `fetch`; an answer that never comes is a failure too (a client waiting on a stalled body). */
  const fetched = async (method: string, url: string, headers: Record<string, string>, body: Buffer) => {
    const res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(15_000) });
    return { status: res.status, body: (await res.json()) as any };
  };
  /** Each client several times (a reset or a stall does not come every time): every answer as `client status code`. */
  const answers = async (
    /** `file` for curl, null for fetch (which sends the bytes from memory). */
    send: (file: string | null) => Promise<{ status: number; body: any }>,
    file: string,
  ): Promise<string[]> => {
    const out: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      for (const client of ['fetch', 'curl'] as const) {
        const r = await send(client === 'curl' ? file : null).catch((e: any) => ({
          status: 0,
          body: { error: { code: `${e.cause?.code ?? e.name}: ${e.message}` } },
        }));
        out.push(`${client} ${r.status} ${r.body?.error?.code}`);
      }
    }
    return out;
  };
  const session = async (key: string) => {
    const s = await t.rest('POST', `${A}/upload-sessions`, { key, body: { file_name: 'ten.bin', file_size: 10 } });
    expect(s.status).toBe(201);
    return (s.body.data.url as string).replace(/^https?:\/\/[^/]+/, t.bridgeUrl);
  };

  it('a 3 MiB single PUT to a 10-byte upload session: 413 read by fetch and by curl', async () => {
    const { key } = await t.createKey();
    const headers = { 'content-type': 'application/octet-stream' };
    const got = await answers(async (file) => {
      const url = await session(key);
      return file ? curl('PUT', url, headers, file) : fetched('PUT', url, headers, big);
    }, bigFile);
    expect(got).toEqual(got.map((g) => `${g.split(' ')[0]} 413 assets.payload_too_large`));
  });

  it('the lingering is bounded: a client that stops sending after the answer is closed once idle', async () => {
    const { key } = await t.createKey();
    const url = new URL(await session(key));
    const started = Date.now();
    const { status, closedAfterMs } = await new Promise<{ status: number; closedAfterMs: number }>((resolve, reject) => {
      let answered = 0;
      const req = request(url, { method: 'PUT', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        answered = res.statusCode!;
        res.resume();
      });
      req.on('error', () => undefined);
      req.on('close', () => resolve({ status: answered, closedAfterMs: Date.now() - started }));
      setTimeout(() => reject(new Error('the connection was not closed')), LINGER_IDLE_MS + 10_000).unref();
      // 64 KiB, then nothing more, never ended.
      req.write(Buffer.alloc(64 * 1024, 1));
    });
    expect(status).toBe(413);
    expect(closedAfterMs).toBeGreaterThanOrEqual(LINGER_IDLE_MS - 500);
  });

  it('a JSON body over the route limit: 413 read by fetch and by curl', async () => {
    const { key } = await t.createKey();
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };
    const json = Buffer.from(JSON.stringify({ name: 'x'.repeat(3 * MiB) }));
    const jsonFile = path.join(dir, 'big.json');
    await writeFile(jsonFile, json);
    const url = `${t.bridgeUrl}${A}/collections`;
    const got = await answers(
      (file) => (file ? curl('POST', url, headers, file) : fetched('POST', url, headers, json)),
      jsonFile,
    );
    expect(got).toEqual(got.map((g) => `${g.split(' ')[0]} 413 payload_too_large`));
    // Sent in chunks (no Content-Length): refused once the limit has arrived, while the rest still comes.
    const chunked: string[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      let at = 0;
      const body = new ReadableStream({
        pull(c) {
          if (at >= json.length) return c.close();
          c.enqueue(json.subarray(at, (at += 64 * 1024)));
        },
      });
      const init = { method: 'POST', headers, body, duplex: 'half', signal: AbortSignal.timeout(15_000) };
      chunked.push(
        await fetch(url, init as RequestInit).then(
          async (res) => `${res.status} ${((await res.json()) as any).error.code}`,
          (e) => `${e.cause?.code ?? e.name}`,
        ),
      );
    }
    expect(chunked).toEqual(chunked.map(() => '413 payload_too_large'));
  });

  it('a multipart upload past the largest file the account may store: 400 read by fetch and by curl', async () => {
    const { key } = await t.createKey();
    const boundary = 'b0undary';
    const form = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n\r\n`),
      big,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const formFile = path.join(dir, 'form.bin');
    await writeFile(formFile, form);
    const headers = { 'content-type': `multipart/form-data; boundary=${boundary}`, authorization: `Bearer ${key}` };
    const url = `${t.bridgeUrl}${A}/upload`;
    const got = await answers(
      (file) => (file ? curl('POST', url, headers, file) : fetched('POST', url, headers, form)),
      formFile,
    );
    // Refused at the largest file the account may store (its quota here): the same answer to every request.
    expect(got).toEqual(got.map((g) => `${g.split(' ')[0]} 400 assets.policy_violation`));
  });
});
