import { checkDomainSpec, checkMacroString, expandMacroString, type MacroContext, parseSpfRecord } from './spf-syntax';

const errorsOf = (record: string) => parseSpfRecord(record).errors;

describe('RFC 7208 grammar: the RFC’s own records parse', () => {
  // Appendix A and the examples of §5, §6 and §7.
  it.each([
    'v=spf1 +all',
    'v=spf1 a -all',
    'v=spf1 a:example.org -all',
    'v=spf1 mx -all',
    'v=spf1 mx:example.org -all',
    'v=spf1 mx mx:example.org -all',
    'v=spf1 mx/30 mx:example.org/30 -all',
    'v=spf1 ptr -all',
    'v=spf1 ip4:192.0.2.128/28 -all',
    'v=spf1 include:example.com include:example.net -all',
    'v=spf1 redirect=example.org',
    'v=spf1 mx -all exp=explain._spf.%{d}',
    'v=spf1 -include:ip4._spf.%{d} -include:ptr._spf.%{d} +all',
    'v=spf1 -ip4:192.0.2.0/24 +all',
    'v=spf1 -exists:%{ir}.%{l1r+}.%{d} +all',
    'v=spf1 exists:%{ir}.%{l1r+-}._spf.%{d} -all',
    'v=spf1 exists:_h.%{h}._l.%{l}._o.%{o}._i.%{i}._spf.%{d} ?all',
    'v=spf1 a:mailers.example.com -all',
    'v=spf1 ip6:2001:db8::cb01 -all',
    'v=spf1 ip6:2001:db8::/32 ip6:::ffff:192.0.2.1 ~all',
  ])('%s', (record) => expect(errorsOf(record)).toEqual([]));
});

describe('RFC 7208 grammar: rule by rule', () => {
  it.each([
    // record = version terms *SP; version = "v=spf1" (case-insensitive literal)
    ['V=SPF1 -ALL', null],
    ['v=spf1', null],
    ['v=spf1 ', null],
    ['v=spf1  a   -all  ', null],
    [' v=spf1 -all', 'does not start with'],
    ['v=spf1\t-all', 'does not start with'],
    ['v=spf1 ip4:1.2.3.4\r-all', 'spaces only'],
    ['v=spf1 ip4:1.2.3.4\t-all', 'spaces only'],
    ['v=spf1 -all\r\n', 'spaces only'],
    // qualifier
    ['v=spf1 ?a ~mx +ptr -all', null],
    ['v=spf1 *all', 'not a known mechanism'],
    ['v=spf1 --all', 'not a known mechanism'],
    // all
    ['v=spf1 all:x', 'all takes no argument'],
    ['v=spf1 all/24', 'all takes no argument'],
    // include / exists need ":" domain-spec and take no CIDR
    ['v=spf1 include:', 'include needs a domain'],
    ['v=spf1 include', 'include needs a domain'],
    ['v=spf1 exists', 'exists needs a domain'],
    ['v=spf1 include:example.com/24', 'not a valid top label'],
    ['v=spf1 exists:example.com/24', 'not a valid top label'],
    // a / mx = name [ ":" domain-spec ] [ dual-cidr-length ]
    ['v=spf1 a:foo.example.com/24//64', null],
    ['v=spf1 mx:foo:bar/baz.example.com', null],
    ['v=spf1 mx:foo:bar/baz.example.com/26', null],
    ['v=spf1 a//64 mx/0 a/32//128', null],
    ['v=spf1 a:example.com/33', 'bad IPv4 CIDR length'],
    ['v=spf1 a:example.com/024', 'bad IPv4 CIDR length'],
    ['v=spf1 a//129', 'bad IPv6 CIDR length'],
    ['v=spf1 mx/24/64', 'bad CIDR length'],
    ['v=spf1 a/', 'bad CIDR length'],
    ['v=spf1 a:', 'empty'],
    // ptr [ ":" domain-spec ], no CIDR
    ['v=spf1 ptr:example.com', null],
    ['v=spf1 ptr/24', 'ptr takes no CIDR length'],
    // ip4-network = qnum "." qnum "." qnum "." qnum; ip4-cidr-length 0-32 without leading zero
    ['v=spf1 ip4:0.0.0.0/0 ip4:255.255.255.255/32', null],
    ['v=spf1 ip4:999.1.1.1', 'not an IPv4 address'],
    ['v=spf1 ip4:01.2.3.4', 'not an IPv4 address'],
    ['v=spf1 ip4:1.2.3', 'not an IPv4 address'],
    ['v=spf1 ip4:1.2.3.4/33', 'bad IPv4 CIDR length'],
    ['v=spf1 ip4:1.2.3.4/08', 'bad IPv4 CIDR length'],
    ['v=spf1 ip4:1.2.3.4//64', 'bad IPv4 CIDR length'],
    ['v=spf1 ip4', 'ip4 needs a network'],
    // ip6-network per RFC 4291 §2.2; ip6-cidr-length 0-128
    ['v=spf1 ip6:2001:db8::/129', 'bad IPv6 CIDR length'],
    ['v=spf1 ip6:fe80::1%eth0', 'not an IPv6 address'],
    ['v=spf1 ip6:2001:db8::g', 'not an IPv6 address'],
    ['v=spf1 ip6:1.2.3.4', 'not an IPv6 address'],
    // unknown mechanisms
    ['v=spf1 foo:bar -all', 'not a known mechanism'],
    ['v=spf1 ip5:1.2.3.4', 'not a known mechanism'],
    ['v=spf1 =x', 'not a known mechanism'],
    // toplabel = ( *alphanum ALPHA *alphanum ) / ( 1*alphanum "-" *( alphanum / "-" ) alphanum )
    ['v=spf1 a:mail.example.123', 'all digits'],
    ['v=spf1 mx:mail.-example', 'dash'],
    ['v=spf1 a:mail.example-', 'dash'],
    ['v=spf1 a:mail.1-2 a:mail.x1 a:mail.1x a:mail.a--b', null],
    ['v=spf1 a:mail.example.com. -all', null],
    ['v=spf1 a:mail.example.com.. -all', 'empty top label'],
    ['v=spf1 a:localhost', 'does not end in "." and a top label'],
    ['v=spf1 a:mail.exa_mple', 'not a valid top label'],
    // domain-end = macro-expand
    ['v=spf1 a:%{d} exists:%{i}.%{d2}', null],
    ['v=spf1 a:%{d}.', 'does not end in'],
    // modifiers: redirect / exp = domain-spec; at most once each (§6)
    ['v=spf1 -all redirect=target.42', 'all digits'],
    ['v=spf1 redirect=', 'empty'],
    ['v=spf1 redirect=a.test redirect=a.test', 'more than one redirect'],
    ['v=spf1 -all exp=', 'empty'],
    ['v=spf1 -all exp=explain', 'does not end in'],
    ['v=spf1 -all exp=%%', 'ends in "%%"'],
    ['v=spf1 -all exp=%{d}.%_', 'ends in "%_"'],
    ['v=spf1 -all exp=e.test exp=e.test', 'more than one exp'],
    ['v=spf1 -all exp=%{c}.explain.test', 'only in explanation text'],
    ['v=spf1 -all REDIRECT=a.test', null],
    // unknown-modifier = name "=" macro-string; name = ALPHA *( ALPHA / DIGIT / "-" / "_" / "." )
    ['v=spf1 custom=value x-y_z.9=%{d}%%%_%- ~all', null],
    ['v=spf1 custom= ~all', null],
    ['v=spf1 9x=value', 'not a known mechanism'],
    ['v=spf1 _x=value', 'not a known mechanism'],
    // macro-expand = "%{" macro-letter transformers *delimiter "}" / "%%" / "%_" / "%-"
    ['v=spf1 note=%{q}', 'unknown macro letter'],
    ['v=spf1 note=%{ix}', 'transformer'],
    ['v=spf1 note=%{d0}', 'zero labels'],
    ['v=spf1 note=%{d2r.-+,/_=}', null],
    ['v=spf1 note=%{D2R}', null],
    ['v=spf1 note=%{d', 'not closed'],
    ['v=spf1 note=%x', 'is not a macro'],
    ['v=spf1 note=100%', 'is not a macro'],
    ['v=spf1 note=é', 'not allowed in a macro-string'],
    ['v=spf1 exists:%{i}.%{q}.bl.test', 'unknown macro letter'],
  ])('%j', (record, error) => {
    const errors = errorsOf(record);
    if (error === null) expect(errors).toEqual([]);
    else {
      expect(errors.length).toBeGreaterThan(0);
      expect(errors.join(' | ')).toContain(error);
    }
  });

  it('splits a:/mx: terms into domain-spec and dual-cidr-length', () => {
    const [a, mx] = parseSpfRecord('v=spf1 a:foo.example.com/24//64 mx:foo:bar/baz.example.com').terms;
    expect(a).toMatchObject({ name: 'a', domain: 'foo.example.com', ip4Cidr: 24, ip6Cidr: 64 });
    expect(mx).toMatchObject({ name: 'mx', domain: 'foo:bar/baz.example.com', cidr: null });
  });

  it('checks domain-specs and macro-strings on their own', () => {
    expect(checkDomainSpec('_spf.example.com')).toBeNull();
    expect(checkDomainSpec('%{l}.%{d}')).toBeNull();
    expect(checkDomainSpec('%{t}.example.com')).toContain('only in explanation text');
    expect(checkMacroString('%{t}%{c}%{r}')).toBeNull();
  });
});

describe('RFC 7208 §7.4 macro expansion examples', () => {
  const v4: MacroContext = {
    sender: 'strong-bad@email.example.com',
    domain: 'email.example.com',
    ip: '192.0.2.3',
    helo: 'mx.example.org',
  };
  const v6: MacroContext = { ...v4, ip: '2001:db8::cb01' };
  it.each([
    ['%{s}', 'strong-bad@email.example.com'],
    ['%{o}', 'email.example.com'],
    ['%{d}', 'email.example.com'],
    ['%{d4}', 'email.example.com'],
    ['%{d3}', 'email.example.com'],
    ['%{d2}', 'example.com'],
    ['%{d1}', 'com'],
    ['%{dr}', 'com.example.email'],
    ['%{d2r}', 'example.email'],
    ['%{l}', 'strong-bad'],
    ['%{l-}', 'strong.bad'],
    ['%{lr}', 'strong-bad'],
    ['%{lr-}', 'bad.strong'],
    ['%{l1r-}', 'strong'],
    ['%{ir}.%{v}._spf.%{d2}', '3.2.0.192.in-addr._spf.example.com'],
    ['%{lr-}.lp._spf.%{d2}', 'bad.strong.lp._spf.example.com'],
    ['%{lr-}.lp.%{ir}.%{v}._spf.%{d2}', 'bad.strong.lp.3.2.0.192.in-addr._spf.example.com'],
    ['%{ir}.%{v}.%{l1r-}.lp._spf.%{d2}', '3.2.0.192.in-addr.strong.lp._spf.example.com'],
    ['%{d2}.trusted-domains.example.net', 'example.com.trusted-domains.example.net'],
    ['%%%_%-', '% %20'],
    ['%{S}', 'strong-bad%40email.example.com'],
  ])('%s', (macro, expanded) => expect(expandMacroString(macro, v4)).toBe(expanded));

  it('expands an IPv6 client as dotted nibbles', () => {
    expect(expandMacroString('%{ir}.%{v}._spf.%{d2}', v6)).toBe(
      '1.0.b.c.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6._spf.example.com',
    );
  });
});
