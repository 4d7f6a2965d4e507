import { isPlatformError } from './errors';
import { isWithin, normalizeDomain, relaxedAligned } from './domain-names';

const codeOf = (input: string): string | null => {
  try {
    normalizeDomain(input);
    return null;
  } catch (e) {
    return isPlatformError(e) ? `${e.status} ${e.code}` : 'other';
  }
};

describe('normalizeDomain', () => {
  it.each([
    ['example.com', 'example.com'],
    ['WWW.Example.COM', 'www.example.com'],
    ['Bücher.example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.example', 'xn--bcher-kva.example'],
    ['a-b.c-d.example', 'a-b.c-d.example'],
    ['blog.münchen.de', 'blog.xn--mnchen-3ya.de'],
    ['ＥＸＡＭＰＬＥ.com', 'example.com'],
    ['1a.example', '1a.example'],
    [`${'a'.repeat(63)}.com`, `${'a'.repeat(63)}.com`],
  ])('accepts %s as %s', (input, expected) => {
    expect(normalizeDomain(input)).toBe(expected);
  });

  it.each([
    'http://a.com',
    'https://a.com',
    'a.com/x',
    'a.com:80',
    'user@a.com',
    'user:pw@a.com',
    '1.2.3.4',
    '0x7f.1',
    '[::1]',
    '::1',
    'localhost',
    '-a.com',
    'a-.com',
    'a..com',
    '.a.com',
    'a.com.',
    'a.com ',
    ' a.com',
    'a .com',
    'a.com?x',
    'a.com#x',
    'a_b.com',
    'a.123',
    '',
    `${'a'.repeat(64)}.com`,
    `${Array.from({ length: 64 }, () => 'abc').join('.')}.com`,
    'a.com\n',
    'a%2ecom',
  ])('rejects %j with 400 invalid_domain', (input) => {
    expect(codeOf(input)).toBe('400 invalid_domain');
  });

  it('keeps the 253-character limit on the ASCII form', () => {
    const name = `${Array.from({ length: 4 }, () => 'a'.repeat(61)).join('.')}.com`; // 4*61+3+4 = 251
    expect(normalizeDomain(name)).toBe(name);
    expect(codeOf(`ab${name}`)).toBe(null);
    expect(codeOf(`abcd.${name}`)).toBe('400 invalid_domain');
  });
});

describe('isWithin', () => {
  it('matches the domain itself and names under it, not look-alikes', () => {
    expect(isWithin('sites.localhost', 'sites.localhost')).toBe(true);
    expect(isWithin('a.sites.localhost', 'sites.localhost')).toBe(true);
    expect(isWithin('evilsites.localhost', 'sites.localhost')).toBe(false);
  });
});

describe('relaxedAligned (DMARC organizational domains)', () => {
  it('accepts the parent domain of a sending subdomain and refuses unrelated or sibling organizations', () => {
    expect(relaxedAligned('example.com', 'mg.example.com')).toBe(true);
    expect(relaxedAligned('news.example.co.uk', 'mg.example.co.uk')).toBe(true);
    expect(relaxedAligned('elsewhere.com', 'mg.example.com')).toBe(false);
    expect(relaxedAligned('example.co.uk', 'other.co.uk')).toBe(false);
    // Private suffixes count: two github.io sites are two organizations.
    expect(relaxedAligned('a.github.io', 'b.github.io')).toBe(false);
    expect(relaxedAligned('co.uk', 'co.uk')).toBe(false);
  });
});
