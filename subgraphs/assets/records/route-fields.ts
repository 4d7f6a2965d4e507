import { z } from 'zod';
import { HEADER_SAFE, MAX_CACHE_CONTROL_LENGTH } from './fields';

/** What the JSON route files of the Assets core module share (routes.ts and the `*-routes.ts` beside it). */
export const P = '/api/v1/assets';
export const tag = 'Assets';
export const str = z.string();
/** A Cache-Control value as the domain takes it (asset-fields.ts): 1 to 256 visible ASCII characters. */
export const cacheControlText = str
  .min(1)
  .max(MAX_CACHE_CONTROL_LENGTH)
  .regex(HEADER_SAFE, 'visible ASCII characters and spaces');
export const ifMatch = (r: { headers: Record<string, string | string[] | undefined> }) => {
  const h = r.headers['if-match'];
  return (Array.isArray(h) ? h[0] : h) ?? null;
};
