import type { FastifyRequest } from 'fastify';

/** A note on a request: the access key, or the bucket and key it resolved to. */
export interface AccessNote {
  accessKeyId?: string | null;
  bucketId?: string;
  key?: string | null;
}

/**
 * What a handler knows that the hooks cannot see: the access key of an upload, the bucket and key
 * a website request resolved to. Kept beside the request (a WeakMap: gone with the request).
 */
const notes = new WeakMap<FastifyRequest, AccessNote>();

/** What the access log reads of a request beside what the hooks see. */
export function accessNoteOf(req: FastifyRequest): AccessNote | undefined {
  return notes.get(req);
}

export function noteAccess(req: FastifyRequest, note: AccessNote): void {
  notes.set(req, { ...notes.get(req), ...note });
}

/** The access key of an authenticated data-plane request (called by the upload plane). */
export const noteAccessKey = (req: FastifyRequest, keyId: string) => noteAccess(req, { accessKeyId: keyId });
