import {
  checkEnvironment,
  checkMemoryMb,
  credentialIdsChanged,
  type EnvironmentBody,
  type MemoryMax,
} from './environment-fields';
import type { ConnectionKind, EnvironmentName } from './limits';
import { gateOutcome } from './releases';
import { checkSettings, isCredentialShaped } from './settings';

const code = (fn: () => unknown) => {
  try {
    fn();
  } catch (e) {
    return (e as { code: string; status: number; details: unknown }).code;
  }
  return null;
};

const FREE: MemoryMax = { plan: 'free', maxMb: 512 };
const check = (kind: ConnectionKind, env: EnvironmentName, body: EnvironmentBody) => checkEnvironment(kind, env, body, FREE);

describe('environment fields (spec 2.2, 7.2)', () => {
  it('keeps omitted or empty secrets out of the change and clears omitted fields', () => {
    const c = check('app', 'production', {
      app_url: 'https://a.example.com/',
      client_secret: '',
      automation_token: 'tok',
    });
    expect(c.fields).toEqual({
      config_path: null,
      config_name: null,
      app_url: 'https://a.example.com',
      client_id: null,
      scopes: null,
    });
    expect(c.secrets).toEqual({ automation_token: 'tok' });
  });

  it('refuses the other kind, preview for apps, bad UUIDs, non-HTTPS origins', () => {
    expect(code(() => check('storefront', 'production', { client_id: 'x' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => check('app', 'preview', {}))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => check('storefront', 'preview', { storefront_id: '123' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => check('app', 'development', { app_url: 'http://a.example.com' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => check('app', 'development', { config_path: '../etc/x.toml' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => check('app', 'development', { scopes: 'read products' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
  });

  it('memory_mb: absent is the default (null), an integer from 128 to the plan maximum, over it its own code', () => {
    expect(check('storefront', 'preview', {}).memoryMb).toBeNull();
    expect(check('app', 'production', { memory_mb: 256 }).memoryMb).toBe(256);
    expect(checkMemoryMb(512, FREE)).toBe(512);
    expect(checkMemoryMb(128, FREE)).toBe(128);
    expect(checkMemoryMb(null, FREE)).toBeNull();
    for (const bad of [127, 0, -1, 256.5, '256', Number.NaN])
      expect([bad, code(() => checkMemoryMb(bad, FREE))]).toEqual([bad, 'COMMERCE_INVALID_CONFIGURATION']);
    expect(code(() => checkMemoryMb(513, FREE))).toBe('COMMERCE_MEMORY_LIMIT_EXCEEDS_PLAN');
    expect(checkMemoryMb(1024, { plan: 'pro', maxMb: 1024 })).toBe(1024);
    try {
      checkMemoryMb(1025, { plan: 'pro', maxMb: 1024 });
      throw new Error('not refused');
    } catch (e) {
      expect(e).toMatchObject({ status: 422, details: { field: 'memory_mb', plan: 'pro', max_memory_mb: 1024 } });
    }
  });

  it('a changed client or storefront id is a changed credential', () => {
    expect(credentialIdsChanged({ client_id: 'a' }, { client_id: 'b' })).toBe(true);
    expect(credentialIdsChanged({ client_id: 'a', app_url: 'x' }, { client_id: 'a', app_url: 'y' })).toBe(false);
  });
});

describe('settings', () => {
  it('takes documented keys only and always refuses credential-shaped ones', () => {
    expect(checkSettings({ currency: 'EUR', maintenance_mode: true })).toEqual({ currency: 'EUR', maintenance_mode: true });
    for (const k of ['api_key', 'storefrontToken', 'client_secret', 'admin_password', 'session_cookie']) {
      expect(isCredentialShaped(k)).toBe(true);
    }
    expect(code(() => checkSettings({ access_token: 1 }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => checkSettings({ colour: 'red' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => checkSettings({ cache_ttl_seconds: -1 }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => checkSettings([]))).toBe('COMMERCE_INVALID_CONFIGURATION');
  });
});

describe('health gate', () => {
  it('all ok → healthy; all failing → failed; anything else → degraded', () => {
    expect(gateOutcome(['ok', 'ok', 'ok'])).toBe('healthy');
    expect(gateOutcome(['failing', 'failing', 'failing'])).toBe('failed');
    expect(gateOutcome(['ok', 'failing', 'ok'])).toBe('degraded');
    expect(gateOutcome(['degraded', 'degraded', 'degraded'])).toBe('degraded');
  });
});
