import { findArea } from '../../app/areas';
import { viaEdge } from '../support/edge';
import type { TestPlatform } from '../support/platform';
const GhostAdminAPI = require('@tryghost/admin-api');

export interface AdminAccess {
  admin_api_url: string;
  admin_api_key: string;
}

/** `npx platform sites admin-key --project ID --json`, run against a test platform's services. */
export async function adminKey(t: TestPlatform, project: string): Promise<AdminAccess> {
  const command = findArea('publisher').cli!.find((c) => c.words.join(' ') === 'sites admin-key')!;
  return (await command.run({
    values: { project, json: true },
    services: t.platform.services.publisher,
    ctx: undefined as never,
  })) as AdminAccess;
}

/** `@tryghost/admin-api` for a site, its requests sent through the test platform's edge (with `url`'s host). */
export function adminApi(t: TestPlatform, access: AdminAccess) {
  const siteHost = new URL(access.admin_api_url).host;
  const makeRequest = async ({ url: u, method, data: payload, params, headers }: any) => {
    // A DELETE carries no body (the SDK passes the id it already put in the path).
    const data = method.toUpperCase() === 'DELETE' ? undefined : payload;
    const target = new URL(u);
    for (const [k, v] of Object.entries(params ?? {})) target.searchParams.set(k, String(v));
    const r = await viaEdge(t.platform.edgeUrl!, siteHost, method.toUpperCase(), target.pathname + target.search, {
      headers: data ? { ...headers, 'content-type': 'application/json' } : headers,
      body: data ? JSON.stringify(data) : undefined,
    });
    if (r.status >= 400) throw Object.assign(new Error(`${r.status} ${r.body.slice(0, 200)}`), { status: r.status });
    return r.body ? JSON.parse(r.body) : {};
  };
  return new GhostAdminAPI({ url: access.admin_api_url, key: access.admin_api_key, version: 'v5.0', makeRequest });
}
