import { isPlatformError } from '../../core/errors';
import { validateProvider } from './mail-settings';
import { normalizeEmail } from '../../core/domain-names';

const codeOf = (fn: () => unknown): string | null => {
  try {
    fn();
    return null;
  } catch (e) {
    return isPlatformError(e) ? e.code : 'other';
  }
};

describe('normalizeEmail', () => {
  it('lowercases and punycodes the domain', () => {
    expect(normalizeEmail('News@Example.COM')).toBe('news@example.com');
    expect(normalizeEmail('post@Bücher.example')).toBe('post@xn--bcher-kva.example');
    expect(normalizeEmail("o'brien+tag@a.example")).toBe("o'brien+tag@a.example");
  });

  it.each([
    '',
    'plain',
    '@a.com',
    'a@',
    'a b@a.com',
    'a@b',
    'a..b@a.com',
    '.a@a.com',
    'a@1.2.3.4',
    'a@http://x.com',
    `${'a'.repeat(65)}@a.com`,
  ])('rejects %j', (input) => {
    expect(codeOf(() => normalizeEmail(input))).toBe('invalid_email');
  });
});

describe('validateProvider', () => {
  const base = {
    domain: 'mg.example.com',
    region: 'EU',
    apiKey: 'key-0123456789',
    fromEmail: 'Letters@MG.example.com',
    fromName: '  The Letters ',
  };

  it('normalises what it stores', () => {
    expect(validateProvider(base)).toEqual({
      domain: 'mg.example.com',
      region: 'eu',
      apiKey: 'key-0123456789',
      fromEmail: 'letters@mg.example.com',
      fromName: 'The Letters',
    });
    expect(validateProvider({ ...base, apiKey: undefined, fromName: '' })).toMatchObject({ apiKey: null, fromName: null });
    expect(validateProvider({ ...base, fromEmail: 'a@news.mg.example.com' }).fromEmail).toBe('a@news.mg.example.com');
  });

  it('accepts a from_email aligned by organizational domain (the DMARC relaxed rule)', () => {
    expect(validateProvider({ ...base, fromEmail: 'letters@example.com' }).fromEmail).toBe('letters@example.com');
    expect(validateProvider({ ...base, fromEmail: 'a@other.example.com' }).fromEmail).toBe('a@other.example.com');
  });

  it.each([
    [{ domain: 'mg.example.com:443' }, 'invalid_domain'],
    [{ region: 'u' }, 'invalid_region'],
    [{ region: 'us east' }, 'invalid_region'],
    [{ apiKey: 'short' }, 'invalid_api_key'],
    [{ apiKey: 'has a space in it' }, 'invalid_api_key'],
    [{ fromEmail: 'letters@example.org' }, 'invalid_from_email'],
    [{ fromEmail: 'letters@mg.example.com.evil.net' }, 'invalid_from_email'],
    [{ fromEmail: 'nope' }, 'invalid_email'],
    [{ fromName: 'Line\nBreak' }, 'invalid_from_name'],
    [{ fromName: 'x'.repeat(101) }, 'invalid_from_name'],
  ])('rejects %j with %s', (override, code) => {
    expect(codeOf(() => validateProvider({ ...base, ...override }))).toBe(code);
  });

  it('never puts the key in an error message', () => {
    const apiKey = 'secret value with spaces';
    try {
      validateProvider({ ...base, apiKey });
    } catch (e) {
      expect(JSON.stringify({ m: (e as Error).message, d: isPlatformError(e) && e.details })).not.toContain(apiKey);
    }
  });
});
