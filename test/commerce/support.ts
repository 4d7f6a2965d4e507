import type { AreaContext } from '../../core/area';
import { productionHost } from '../../dataplane/releases';
import commerceArea from '../../subgraphs/commerce';
import type { CommerceService } from '../../subgraphs/commerce/service';
import { type TestPlatform, uniqueName } from '../support/platform';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const base = (projectId: string) => `/api/v1/projects/${projectId}/commerce`;

export const commerce = (t: TestPlatform) => (t.platform.services as unknown as { commerce: CommerceService }).commerce;

/**
 * What the hosted node's release host shows of releases, read from the data plane its in-process agent
 * runs them on (docs/decisions/0325-nodes-module.md): whether a release's process runs, its working
 * directory, and which release a project's production address routes to.
 */
export const releasesOn = (t: TestPlatform) => {
  const plane = t.platform.dataPlane!;
  return {
    running: (releaseId: string) => plane.supervisor.status(releaseId)?.state === 'running',
    releaseDir: (releaseId: string) => commerce(t).releaseDir(releaseId),
    productionOf: (projectId: string) => plane.edge.route(productionHost(projectId))?.owner ?? null,
  };
};

/** Runs one of the area's CLI commands as `npx platform …` would (same services). */
export async function cli(t: TestPlatform, words: string, values: Record<string, string>): Promise<any> {
  const command = commerceArea.cli!.find((c) => c.words.join(' ') === words);
  if (!command) throw new Error(`no command ${words}`);
  return command.run({ values, services: commerce(t), ctx: {} as AreaContext<any> });
}

/** A tenant: account, key, project, and a store on the stand-in. */
export async function tenant(t: TestPlatform, opts: { role?: 'owner' | 'member' | 'read_only' } = {}) {
  const { key, accountId, account } = await t.createKey({ role: opts.role });
  const project = await t.platform.services.identity.createProject(accountId, uniqueName('shop'));
  const store = await cli(t, 'commerce stores create', { domain: `${uniqueName('store')}.example` });
  return { key, accountId, account, projectId: project._id, store };
}

export async function waitOperation(t: TestPlatform, key: string, projectId: string, id: string, timeoutMs = 90_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.rest('GET', `${base(projectId)}/operations/${id}`, { key });
    const op = res.body?.data;
    if (op && (op.status === 'succeeded' || op.status === 'failed')) return op;
    if (Date.now() > until) throw new Error(`operation ${id} still ${op?.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function waitRelease(t: TestPlatform, key: string, projectId: string, id: string, timeoutMs = 90_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await t.rest('GET', `${base(projectId)}/releases`, { key });
    const r = res.body?.data?.items?.find((x: any) => x.id === id);
    if (r && !['queued', 'running'].includes(r.status)) return r;
    if (Date.now() > until) throw new Error(`release ${id} still ${r?.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function connectStorefront(t: TestPlatform, tn: Awaited<ReturnType<typeof tenant>>) {
  const res = await t.rest('POST', `${base(tn.projectId)}/connect`, {
    key: tn.key,
    body: { kind: 'storefront', store_domain: tn.store.store_domain, confirm_generic_storefront: true },
  });
  expect(res.status).toBe(202);
  expect((await waitOperation(t, tn.key, tn.projectId, res.body.data.id)).status).toBe('succeeded');
}

export async function connectApp(t: TestPlatform, tn: Awaited<ReturnType<typeof tenant>>) {
  const res = await t.rest('POST', `${base(tn.projectId)}/connect`, {
    key: tn.key,
    body: { kind: 'app', store_domain: tn.store.store_domain, development_branch: 'main' },
  });
  expect(res.status).toBe(202);
  expect((await waitOperation(t, tn.key, tn.projectId, res.body.data.id)).status).toBe('succeeded');
}
