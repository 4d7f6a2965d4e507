import { z } from 'zod';
import { type AnyRoute, route } from '../../core/rest-route';
import { MAX_NOTE_LENGTH } from './limits';

const PREFIX = '/api/v1/zz310710';
const tag = 'Zz310710';

/** Every REST route of the zz310710 area, each onto one GraphQL operation in operations/. */
export const zz310710Routes: AnyRoute[] = [
  route({
    method: 'GET',
    path: `${PREFIX}/status`,
    summary: 'The zz310710 area, as the caller sees it',
    tag,
    operation: 'status',
    query: z.object({ note: z.string().max(MAX_NOTE_LENGTH).optional() }).strict(),
    variables: (r) => ({ note: r.query.note ?? null }),
    select: (d) => d.zz310710Status,
    status: 200,
    envelope: 'standard',
  }),
];
