import { checkEnvironment, credentialIdsChanged } from './environment-fields';
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

describe('environment fields (spec 2.2, 7.2)', () => {
  it('keeps omitted or empty secrets out of the change and clears omitted fields', () => {
    const c = checkEnvironment('app', 'production', {
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
    expect(code(() => checkEnvironment('storefront', 'production', { client_id: 'x' }))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => checkEnvironment('app', 'preview', {}))).toBe('COMMERCE_INVALID_CONFIGURATION');
    expect(code(() => checkEnvironment('storefront', 'preview', { storefront_id: '123' }))).toBe(
      'COMMERCE_INVALID_CONFIGURATION',
    );
    expect(code(() => checkEnvironment('app', 'development', { app_url: 'http://a.example.com' }))).toBe(
      'COMMERCE_INVALID_CONFIGURATION',
    );
    expect(code(() => checkEnvironment('app', 'development', { config_path: '../etc/x.toml' }))).toBe(
      'COMMERCE_INVALID_CONFIGURATION',
    );
    expect(code(() => checkEnvironment('app', 'development', { scopes: 'read products' }))).toBe(
      'COMMERCE_INVALID_CONFIGURATION',
    );
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
