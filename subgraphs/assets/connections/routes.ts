import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { httpConfigSchema, httpSecretsSchema, s3ConfigSchema, s3SecretsSchema } from './config';
import { revisionHeader } from '../revisions';
import { SCOPES } from '../records';

const P = '/api/v1/assets/connections';
const tag = 'Assets';
const name = z.string().min(1).max(100);
const createBody = z.discriminatedUnion('type', [
  z.object({ name, type: z.literal('s3'), config: s3ConfigSchema, secrets: s3SecretsSchema.optional() }).strict(),
  z.object({ name, type: z.literal('http'), config: httpConfigSchema, secrets: httpSecretsSchema.optional() }).strict(),
]);
/** Config keys are merged into the stored ones and checked against the connection's type by the service. */
const patchBody = z
  .object({
    name: name.optional(),
    config: z.record(z.unknown()).optional(),
    secrets: z.record(z.string().min(1).max(4096).nullable()).optional(),
  })
  .strict();
/** Spec 4.3 connections: external S3-compatible storage or an HTTP origin; secrets write-only. */
export const connectionRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: P,
    summary: 'Create a connection (type s3 or http); secret values are accepted here and never returned',
    tag,
    operation: 'create-connection',
    body: createBody,
    scope: SCOPES.admin,
    errors: [409],
    creates: { connectionID: '/data/id' },
    derive: { body: 'input' },
    select: (d) => d.createAssetConnection,
    headers: revisionHeader,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: P,
    summary: 'List connections',
    tag,
    operation: 'list-connections',
    scope: SCOPES.read,
    select: (d) => ({ items: d.assetConnections, next_cursor: '' }),
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: `${P}/{connectionID}`,
    summary: 'One connection (secrets only as has_* flags)',
    tag,
    operation: 'get-connection',
    scope: SCOPES.read,
    derive: { params: 'id' },
    select: (d) => d.assetConnection,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'PATCH',
    path: `${P}/{connectionID}`,
    summary: 'Rename, merge config keys, set or (null) remove secrets; If-Match honoured when sent',
    tag,
    operation: 'update-connection',
    body: patchBody,
    scope: SCOPES.admin,
    errors: [409, 412],
    // An absent `config` or `secrets` changes nothing (the service reads it as `{}`).
    derive: { body: 'input', params: 'id', headers: ['If-Match'] },
    select: (d) => d.updateAssetConnection,
    headers: revisionHeader,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/{connectionID}`,
    summary: 'Delete a connection',
    tag,
    operation: 'delete-connection',
    scope: SCOPES.admin,
    derive: { params: 'id' },
    select: (d) => d.deleteAssetConnection,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{connectionID}/verify`,
    summary: 'Reach the source now (a listing, or the manifest); 422 with the reason when it fails',
    tag,
    operation: 'verify-connection',
    scope: SCOPES.admin,
    errors: [422],
    derive: { params: 'id' },
    select: (d) => d.verifyAssetConnection,
    status: 200,
    envelope: 'standard',
  }),
];
