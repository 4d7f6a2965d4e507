import { isPlatformError } from '../../core/errors';
import type { Principal } from '../../core/principal';
import { requireLiveKey } from './checklist';
import { isTestKey } from './sending/sender';

/** The key mode is read from `principal.mode` once identity carries it (docs/contracts.md: `keys create --mode test`). */
const p = (mode?: string) =>
  ({ accountId: 'a', accountSlug: 'a', plan: 'pro', keyId: 'k', role: 'owner', scopes: [], mode }) as Principal;

describe('key mode', () => {
  it('checklists refuse a test key and take a live one (or one without a mode)', () => {
    expect(requireLiveKey(p('live')).accountId).toBe('a');
    expect(requireLiveKey(p()).accountId).toBe('a');
    try {
      requireLiveKey(p('test'));
      throw new Error('accepted');
    } catch (e) {
      expect(isPlatformError(e) && `${e.status} ${e.code}`).toBe('403 live_key_required');
    }
  });

  it('a test key records mail instead of sending it', () => {
    expect(isTestKey(p('test'))).toBe(true);
    expect(isTestKey(p('live'))).toBe(false);
  });
});
