/**
 * Mail sending through the whole platform (bridge → router → mail subgraph → durable sender →
 * SMTP sink; events → outbox → Kafka → event store → signed webhook delivery):
 *   - messages per second from `POST /v1/mail/send` to `mta_accepted` at the sink (BENCH_MESSAGES,
 *     default 300, sent 16 at a time; the clock stops when the sink holds every message);
 *   - p50/p99 from a send's 202 to the first webhook delivery of its `mail.message.accepted` event.
 * Run: `npm run -s build && node bin/platform.js infra up && node dist/bench/mail-send.js`.
 */
import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPlatform } from '../app/platform';
import { loadConfig } from '../core/config';
import { startSmtpSink } from '../subgraphs/mail/smtp-sink';
import type { MailServices } from '../subgraphs/mail/service';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const N = Number(process.env.BENCH_MESSAGES ?? 300);
const CONCURRENCY = 16;

async function main() {
  const sink = await startSmtpSink();
  const firstHook = new Map<string, number>();
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const id = JSON.parse(body).data?.messageId as string;
      if (id && !firstHook.has(id)) firstHook.set(id, performance.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;

  const id = randomBytes(4).toString('hex');
  const base = loadConfig(process.env);
  const config = loadConfig({
    ...process.env,
    MONGODB_URI: base.mongodbUri.replace(/\/[^/?]*(\?|$)/, `/bench_mail_${id}$1`),
    LOG_LEVEL: 'warn',
    MAIL_SMTP_URL: sink.url,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
  });
  const platform = await startPlatform({
    config,
    bridgePort: 0,
    routerPort: 0,
    subgraphBasePort: 0,
    topicPrefix: `benchmail${id}`,
  });
  const services = platform.services as unknown as { identity: any; mail: MailServices };
  const created = await services.identity.createApiKey({ accountSlug: `bench-mail-${id}`, plan: 'pro' });
  const from = 'bench@sender.test';
  await services.identity.senders.verify(created.accountId, from);
  const url = platform.bridgeUrl!;
  const headers = { authorization: `Bearer ${created.key}`, 'content-type': 'application/json' };
  const hook = await fetch(`${url}/v1/mail/webhooks`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ url: hookUrl, eventTypes: ['mail.message.accepted'] }),
  });
  if (hook.status !== 201) throw new Error(`webhook create: ${hook.status}`);

  const sentAt = new Map<string, number>();
  const before = sink.received.length;
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < N) {
        next++;
        const res = await fetch(`${url}/v1/mail/send`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ from, to: `r${next}@rcpt.test`, subject: 'bench', text: 'x' }),
        });
        const body = (await res.json()) as { data: { id: string } };
        sentAt.set(body.data.id, performance.now());
      }
    }),
  );
  const accepted = performance.now();
  while (sink.received.length - before < N) await new Promise((r) => setTimeout(r, 20));
  const atSink = performance.now();
  const until = Date.now() + 60_000;
  while (firstHook.size < N && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  const lat = [...sentAt]
    .filter(([m]) => firstHook.has(m))
    .map(([m, t]) => firstHook.get(m)! - t)
    .sort((a, b) => a - b);
  const p = (q: number) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]?.toFixed(0);
  console.log(`mail send: ${N} messages, ${CONCURRENCY} concurrent senders`);
  console.log(`  POST /v1/mail/send accepted: ${(N / ((accepted - t0) / 1000)).toFixed(0)} msg/s`);
  console.log(
    `  send → mta_accepted at the sink: ${(N / ((atSink - t0) / 1000)).toFixed(0)} msg/s (${((atSink - t0) / 1000).toFixed(2)} s for all)`,
  );
  console.log(`  send → first webhook delivery: p50 ${p(0.5)} ms, p99 ${p(0.99)} ms (${lat.length}/${N} delivered)`);
  await platform.stop();
  await sink.stop();
  receiver.close();
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
