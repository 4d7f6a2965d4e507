import type { FastifyInstance } from 'fastify';
import type { UsageCounters } from './usage';
import type { AssetModels } from '../records';

/** What the counter reads of Assets: the asset records (an asset's account). */
export type CountedAssets = { readonly m: Pick<AssetModels, 'Asset'> };

/** Asset ids whose account this process has looked up (an asset never changes account). */
const OWNERS_MAX = 50_000;

/**
 * Counts every delivery the assets CDN listener answers with bytes (200, 206) or a revalidation
 * (304): requests and bytes sent per account and day, and which of them were derivatives (`/t/`,
 * `/tr/`). It hooks `onResponse`, after the bytes went out, so it adds nothing to the response
 * time; the owner of an asset id is remembered after one look-up by `_id`.
 */
export function cdnUsageHook(app: FastifyInstance, assets: CountedAssets, usage: UsageCounters): void {
  const owners = new Map<string, string | null>();
  const ownerOf = async (id: string): Promise<string | null> => {
    const known = owners.get(id);
    if (known !== undefined) return known;
    const a = await assets.m.Asset.findOne({ _id: id }, { accountId: 1 }).lean<{ accountId: string }>().exec();
    if (owners.size >= OWNERS_MAX) owners.clear();
    // An unknown id is not remembered: it may be an upload that has not landed yet.
    if (a) owners.set(id, a.accountId);
    return a?.accountId ?? null;
  };
  app.addHook('onResponse', async (req, reply) => {
    const status = reply.statusCode;
    if (status !== 200 && status !== 206 && status !== 304) return;
    const id = (req.params as { id?: string } | undefined)?.id;
    if (!id) return;
    const accountId = await ownerOf(id).catch(() => null);
    if (!accountId) return;
    const length = req.method === 'HEAD' || status === 304 ? 0 : Number(reply.getHeader('content-length') ?? 0) || 0;
    const url = req.routeOptions.url ?? '';
    const derivative = url.startsWith('/t/') || url.includes('/tr/');
    usage.add(accountId, { deliveryRequests: 1, deliveryBytes: length, ...(derivative ? { transformDeliveries: 1 } : {}) });
  });
}
