/**
 * Public mail audits per second against the loopback DNS stand-in, for a cached domain (answered
 * from the two-minute cache) and an uncached one (every audit asks DNS: SPF walk, DMARC, MX, two
 * DKIM selectors). Service level, eight audits in flight (the spec's concurrency cap), the rate
 * limit out of the way. BENCH_SECONDS per case (default 3).
 * Run: `npm run -s build && node dist/bench/mail-audit.js`.
 */
import { SystemDnsResolver } from '../core/dns/resolver';
import { startDnsStandIn } from '../core/dns/stand-in-server';
import { AuditService } from '../subgraphs/mail/audit';
import { RateLimiter, TtlCache } from '../subgraphs/mail/audit-limits';
import { AUDIT_ZONES, PLATFORM_SPF_DOMAIN } from '../subgraphs/mail/testing/audit-zones';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const IN_FLIGHT = 8;

async function run(name: string, service: AuditService, domain: string): Promise<void> {
  const until = Date.now() + SECONDS * 1000;
  let done = 0;
  const latencies: number[] = [];
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (Date.now() < until) {
        const t0 = performance.now();
        await service.audit({ domain, selectors: 'sel1,s2', clientIp: 'bench' });
        latencies.push(performance.now() - t0);
        done++;
      }
    }),
  );
  latencies.sort((a, b) => a - b);
  const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))].toFixed(2);
  console.log(
    `${name.padEnd(10)} ${(done / SECONDS).toFixed(0).padStart(7)} audits/s   p50 ${p(0.5)} ms   p99 ${p(0.99)} ms   (${done} audits)`,
  );
}

async function main() {
  const dns = await startDnsStandIn({ zones: AUDIT_ZONES });
  const resolver = new SystemDnsResolver([dns.address]);
  const base = {
    resolver,
    platformSpfDomain: PLATFORM_SPF_DOMAIN,
    rate: new RateLimiter(Number.MAX_SAFE_INTEGER),
    maxConcurrent: IN_FLIGHT,
  };
  console.log(`mail audit, domain chain.test (4 SPF lookups), ${IN_FLIGHT} in flight, DNS stand-in at ${dns.address}`);
  await run('cached', new AuditService(base), 'chain.test');
  // A zero-length cache lifetime: every audit misses.
  await run('uncached', new AuditService({ ...base, cache: new TtlCache(0) }), 'chain.test');
  await dns.stop();
}

void main();
