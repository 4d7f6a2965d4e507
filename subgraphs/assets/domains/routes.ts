import { z } from 'zod';
import { type AnyRoute, route } from '../../../core/rest-route';
import { SCOPES } from '../records';

const P = '/api/v1/assets/domains';
const tag = 'Assets';

const createBody = z
  .object({
    domain: z.string().min(1).max(1024),
    /** The bucket it serves (default: the account's default bucket). */
    bucket: z.string().min(1).optional(),
  })
  .strict();

/** Spec 4.3 custom domains: create, list, verify (DNS TXT), delete. */
export const domainRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: P,
    summary: 'Add a custom domain for a bucket; the answer names the TXT record that proves it',
    tag,
    operation: 'create-domain',
    body: createBody,
    scope: SCOPES.admin,
    errors: [404, 409],
    creates: { domainID: '/data/id' },
    derive: { body: '.' },
    select: (d) => d.createAssetDomain,
    status: 201,
    envelope: 'standard',
  }),
  route({
    method: 'GET',
    path: P,
    summary: 'List custom domains',
    tag,
    operation: 'list-domains',
    scope: SCOPES.read,
    select: (d) => ({ items: d.assetDomains, next_cursor: '' }),
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'POST',
    path: `${P}/{domainID}/verify`,
    summary: 'Look the TXT record up now: verified, 422 when absent or different, 503 when DNS fails',
    tag,
    operation: 'verify-domain',
    scope: SCOPES.admin,
    errors: [409, 422],
    derive: { params: 'id' },
    select: (d) => d.verifyAssetDomain,
    status: 200,
    envelope: 'standard',
  }),
  route({
    method: 'DELETE',
    path: `${P}/{domainID}`,
    summary: 'Remove a custom domain (the CDN stops serving it)',
    tag,
    operation: 'delete-domain',
    scope: SCOPES.admin,
    derive: { params: 'id' },
    select: (d) => d.deleteAssetDomain,
    status: 200,
    envelope: 'standard',
  }),
];
