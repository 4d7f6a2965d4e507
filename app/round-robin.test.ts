import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from './replicas';
import { RoundRobin } from './round-robin';

/** A target that answers with its name and the body it got, or drops the connection mid-request. */
async function target(name: string, behaviour: 'answer' | 'drop' = 'answer') {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push(body);
      if (behaviour === 'drop') return req.socket.destroy();
      res.writeHead(201, { 'content-type': 'text/plain', 'x-target': name });
      res.end(`${name}:${body}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function send(url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('RoundRobin (the local replicas front)', () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of closers.splice(0)) await c();
  });

  it('takes turns over the targets, passing status, headers and body through', async () => {
    const a = await target('a');
    const b = await target('b');
    const rr = new RoundRobin({ targets: [a.url, b.url] });
    closers.push(a.close, b.close, () => rr.close());
    const front = await rr.listen(0, '127.0.0.1');
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await send(`${front}/x`, `n${i}`));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(answers.map((r) => r.text.split(':')[0]).sort()).toEqual(['a', 'a', 'b', 'b']);
    expect(answers.map((r) => r.text.split(':')[1])).toEqual(['n0', 'n1', 'n2', 'n3']);
  });

  it('sends a request a dead replica refused to the next one, body intact', async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const b = await target('b');
    const rr = new RoundRobin({ targets: [dead, b.url] });
    closers.push(b.close, () => rr.close());
    const front = await rr.listen(0, '127.0.0.1');
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await send(front, JSON.stringify({ i })));
    expect(answers.map((r) => r.status)).toEqual([201, 201, 201]);
    expect(b.seen).toEqual(['{"i":0}', '{"i":1}', '{"i":2}']);
    expect(rr.counts.rerouted).toBeGreaterThanOrEqual(1);
  });

  it('answers 502 when a replica fails after it got the request, and does not send it again', async () => {
    const drop = await target('drop', 'drop');
    const b = await target('b');
    const rr = new RoundRobin({ targets: [drop.url, b.url] });
    closers.push(drop.close, b.close, () => rr.close());
    const front = await rr.listen(0, '127.0.0.1');
    const first = await send(front, 'once');
    expect(first.status).toBe(502);
    expect(JSON.parse(first.text).error.code).toBe('upstream_failed');
    // The request reached one replica only: it may have acted on it, so it is not replayed.
    expect(drop.seen).toEqual(['once']);
    expect(b.seen).toEqual([]);
  });
});
