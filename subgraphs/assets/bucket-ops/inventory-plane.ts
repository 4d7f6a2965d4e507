import type { FastifyInstance } from 'fastify';
import type { InventoryExports } from './inventory';
import type { AssetsService } from '../storage';
import { type Authenticate, sendError } from '../planes';

/**
 * `GET /api/v1/buckets/{bucketID}/inventory-exports/{exportID}/file` on the bridge listener: the
 * export's bytes streamed from the blob store (a file, not a JSON envelope), for the bucket's own
 * account only (another account's export is 404, as everywhere).
 */
export async function inventoryFilePlane(
  app: FastifyInstance,
  assets: AssetsService,
  exportsSvc: InventoryExports,
  authenticate: Authenticate,
): Promise<void> {
  app.get<{ Params: { bucketID: string; exportID: string } }>(
    '/api/v1/buckets/:bucketID/inventory-exports/:exportID/file',
    async (req, reply) => {
      try {
        const principal = assets.reader(await authenticate(req));
        const { doc, body } = await exportsSvc.file(principal, req.params.bucketID, req.params.exportID);
        return reply
          .status(200)
          .header('Content-Type', doc.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson')
          .header('Content-Disposition', `attachment; filename="inventory-${doc._id}.${doc.format}"`)
          .header('Content-Length', String(doc.size))
          .header('Cache-Control', 'private, no-store')
          .send(body);
      } catch (e) {
        return sendError(reply, e, req.log);
      }
    },
  );
}
