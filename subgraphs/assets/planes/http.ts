import type { FastifyReply, FastifyRequest } from 'fastify';
import { isPlatformError } from '../../../core/errors';
import type { Ports } from '../../../core/ports';
import type { Principal } from '../../../core/principal';

/** The prefix of the area's byte routes (spec 4.3). */
export const ASSETS_PREFIX = '/api/v1/assets';
/** How the data plane learns the caller (it runs outside GraphQL, so the router's check does not). */
export type Authenticate = (req: FastifyRequest) => Promise<Principal | null>;

/** The bearer key of `Authorization`, resolved by the kernel's authenticator port. */
export function bearerAuthenticate(ports: Ports): Authenticate {
  return async (req) => {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    return m ? ports.get('authenticator').authenticate(m[1]) : null;
  };
}

export function sendError(reply: FastifyReply, e: unknown, log: FastifyRequest['log']): FastifyReply {
  if (isPlatformError(e)) {
    return reply.status(e.status).send({ success: false, error: { code: e.code, message: e.message, details: e.details } });
  }
  const code = (e as { code?: string }).code;
  if (typeof code === 'string' && code.startsWith('FST_')) {
    return reply
      .status(400)
      .send({ success: false, error: { code: 'validation_failed', message: (e as Error).message, details: {} } });
  }
  log.error({ err: e }, 'assets data plane failed');
  return reply.status(500).send({ success: false, error: { code: 'internal', message: 'internal error', details: {} } });
}
