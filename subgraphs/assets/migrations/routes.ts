import { z } from 'zod';
import { queryInt } from '../../../core/query-int';
import { type AnyRoute, route } from '../../../core/rest-route';
import { MIGRATIONS_LIST_MAX } from './migrations';
import { SCOPES } from '../records';

const P = '/api/v1/assets/migrations';
const tag = 'Assets';

const createBody = z
  .object({
    connection: z.string().min(1),
    /** Default: the account's default bucket. */
    bucket: z.string().min(1).optional(),
    folder: z.string().max(512).optional(),
  })
  .strict();
const listQuery = z.object({ limit: queryInt(1, MIGRATIONS_LIST_MAX).optional(), cursor: z.string().optional() }).strict();

/**
 * Spec 4.3 migrations. `GET /migrations/{id}/report` is a download (raw JSON or CSV), served by the
 * data plane (report-plane.ts), not a JSON envelope route.
 */
export const migrationRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: P,
    summary: 'Copy every object of a connection into a bucket: a durable job (202)',
    tag,
    operation: 'create-migration',
    body: createBody,
    scope: SCOPES.admin,
    // 404: the connection (or bucket) named is not one of the account's.
    errors: [404],
    creates: { migrationID: '/data/id' },
    derive: { body: 'input' },
    select: (d) => d.createAssetMigration,
    status: 202,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: P,
    summary: 'List migrations, newest first',
    tag,
    operation: 'list-migrations',
    query: listQuery,
    scope: SCOPES.read,
    derive: { query: '.' },
    select: (d) => d.assetMigrations,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/{migrationID}`,
    summary: 'One migration with its item counts',
    tag,
    operation: 'get-migration',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetMigration,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{migrationID}/cancel`,
    summary: 'Cancel a queued or running migration (409 once it ended)',
    tag,
    operation: 'cancel-migration',
    scope: SCOPES.admin,
    errors: [409],
    derive: { params: 'id' },
    select: (d) => d.cancelAssetMigration,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{migrationID}/items/{itemID}/retry`,
    summary: 'Retry a failed item (an ended migration runs again for it); 409 for other items',
    tag,
    operation: 'retry-migration-item',
    scope: SCOPES.admin,
    errors: [409],
    // The migration, the first path parameter, is the operation's `id`.
    derive: { params: { migrationID: 'id' } },
    select: (d) => d.retryAssetMigrationItem,
    status: 202,
    envelope: 'standard',
  }),
];
