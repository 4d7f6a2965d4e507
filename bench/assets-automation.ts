/**
 * Assets automation figures (decision 0027), measured in one run on this machine:
 *  1. MCP: p50/p99 of a read-only `tools/call get` through the stateless endpoint with the official
 *     SDK client (one connection, sequential, BENCH_MCP_CALLS calls, default 300), and calls/s.
 *  2. Workflows: p50/p99 from `POST …/run` to `succeeded` of a one-step `tag` workflow
 *     (BENCH_RUNS runs, default 30, sequential), and from `approve` to `succeeded` of a run waiting
 *     at a `wait_for_approval` step (same count). Both include the operation engine's pickup.
 * Run: `npm run -s build && node dist/bench/assets-automation.js` (the engines must be up).
 */
import 'reflect-metadata';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startBenchPlatform } from './bench-platform';

process.env.APOLLO_TELEMETRY_DISABLED = '1';
const MCP_CALLS = Number(process.env.BENCH_MCP_CALLS ?? 300);
const RUNS = Number(process.env.BENCH_RUNS ?? 30);

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const summary = (ms: number[]) => {
  const s = [...ms].sort((a, b) => a - b);
  return `p50 ${pct(s, 50).toFixed(1)} ms, p99 ${pct(s, 99).toFixed(1)} ms (n=${s.length})`;
};

async function main(): Promise<void> {
  const benchRun = await startBenchPlatform('assets-auto-bench', { RATE_LIMIT_PER_MINUTE: '1000000' });
  const { platform, id, bridge } = benchRun;
  try {
    const { key } = await platform.services.identity.createApiKey({ accountSlug: `bench-${id}`, plan: 'pro' });
    const auth = { authorization: `Bearer ${key}` };
    const json = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${bridge}/api/v1/assets${p}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const out = (await res.json()) as { data: any };
      if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(out)}`);
      return out.data;
    };
    const fd = new FormData();
    fd.append('key', 'bench/one.txt');
    fd.append('file', new Blob([Buffer.from('bench')]), 'one.txt');
    const up = await fetch(`${bridge}/api/v1/assets/upload`, { method: 'POST', headers: auth, body: fd });
    const asset = ((await up.json()) as { data: { id: string } }).data;
    console.log(`assets automation bench (node ${process.version}, ${new Date().toISOString()})`);

    // 1. MCP read-only tool calls.
    const client = new Client({ name: 'bench', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${bridge}/api/v1/assets/mcp`), { requestInit: { headers: auth } }),
    );
    const calls: number[] = [];
    const began = performance.now();
    for (let i = 0; i < MCP_CALLS; i++) {
      const t0 = performance.now();
      const r = await client.callTool({ name: 'get', arguments: { asset_id: asset.id } });
      if (r.isError) throw new Error(JSON.stringify(r.content));
      calls.push(performance.now() - t0);
    }
    const secs = (performance.now() - began) / 1000;
    await client.close();
    console.log(`MCP tools/call get: ${summary(calls)}; ${(MCP_CALLS / secs).toFixed(0)} calls/s`);

    // 2. Workflow runs.
    const create = async (steps: unknown[]) => {
      const wf = await json('POST', '/workflows', { name: 'bench', draft: { trigger: { type: 'manual' }, steps } });
      await json('POST', `/workflows/${wf.id}/publish`);
      await json('POST', `/workflows/${wf.id}/activate`);
      return wf.id as string;
    };
    const waitFor = async (runId: string, status: string) => {
      for (;;) {
        const r = await json('GET', `/workflows/runs/${runId}`);
        if (r.status === status) return r;
        if (r.status === 'failed' || r.status === 'cancelled') throw new Error(`run ${runId} ${r.status}`);
        await new Promise((res) => setTimeout(res, 10));
      }
    };
    const oneStep = await create([{ id: 't', type: 'tag', config: { add: ['b'] } }]);
    const runTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const run = await json('POST', `/workflows/${oneStep}/run`, { asset_id: asset.id });
      await waitFor(run.id, 'succeeded');
      runTimes.push(performance.now() - t0);
    }
    console.log(`run → succeeded (1 tag step): ${summary(runTimes)}`);
    const gated = await create([
      { id: 'ok', type: 'wait_for_approval', config: {} },
      { id: 't', type: 'tag', config: { add: ['c'] } },
    ]);
    const approveTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const run = await json('POST', `/workflows/${gated}/run`, { asset_id: asset.id });
      const waiting = await waitFor(run.id, 'waiting_approval');
      const t0 = performance.now();
      await json('POST', `/workflows/approvals/${waiting.approval_id}/approve`, {});
      await waitFor(run.id, 'succeeded');
      approveTimes.push(performance.now() - t0);
    }
    console.log(`approve → succeeded (1 tag step after): ${summary(approveTimes)}`);
  } finally {
    await benchRun.stop();
  }
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
