import http from 'node:http';
import { checkUrlShape, isForbiddenAddress, OutboundTimeout, requestLocal, resolveTarget } from './outbound-http';

const none = new Set<string>();
const refused = (fn: () => unknown) => expect(fn).toThrow(expect.objectContaining({ code: 'unsafe_push_url', status: 400 }));

describe('outbound safety', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '192.0.2.5',
    '198.18.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:8.8.8.8',
    '2001:db8::1',
    'ff02::1',
    '64:ff9b::a00:1',
  ])('refuses %s', (a) => expect(isForbiddenAddress(a)).toBe(true));

  it.each(['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111'])('allows public %s', (a) =>
    expect(isForbiddenAddress(a)).toBe(false),
  );

  it('refuses plain http, credentials, loopback names and private literals', () => {
    refused(() => checkUrlShape('http://example.com/hook', none));
    refused(() => checkUrlShape('https://user:pw@example.com/hook', none));
    refused(() => checkUrlShape('https://localhost/hook', none));
    refused(() => checkUrlShape('https://127.0.0.1/hook', none));
    refused(() => checkUrlShape('https://[::ffff:7f00:1]/hook', none));
    refused(() => checkUrlShape('https://2130706433/hook', none)); // decimal 127.0.0.1
    refused(() => checkUrlShape('https://0x7f.1/hook', none));
    expect(() => checkUrlShape('not a url', none)).toThrow(expect.objectContaining({ code: 'invalid_push_url' }));
    expect(checkUrlShape('https://example.com/hook', none).hostname).toBe('example.com');
  });

  it('lets an allowed host use plain http on any port', () => {
    expect(checkUrlShape('http://127.0.0.1:9999/in', new Set(['127.0.0.1'])).port).toBe('9999');
  });

  it('refuses a name that resolves to a private address, pins a public one, tolerates no answer at create', async () => {
    const privateDns = async () => [{ address: '10.0.0.7', family: 4 }];
    await expect(resolveTarget('https://hooks.example/x', none, { resolver: privateDns })).rejects.toMatchObject({
      code: 'unsafe_push_url',
    });
    const mixed = async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '::1', family: 6 },
    ];
    await expect(resolveTarget('https://hooks.example/x', none, { resolver: mixed })).rejects.toMatchObject({
      code: 'unsafe_push_url',
    });
    const pub = async () => [{ address: '93.184.216.34', family: 4 }];
    await expect(resolveTarget('https://hooks.example/x', none, { resolver: pub })).resolves.toMatchObject({
      address: '93.184.216.34',
    });
    const nx = async () => {
      throw new Error('ENOTFOUND');
    };
    await expect(resolveTarget('https://nowhere.example/x', none, { resolver: nx, lenient: true })).resolves.toBeNull();
    await expect(resolveTarget('https://nowhere.example/x', none, { resolver: nx })).rejects.toMatchObject({
      code: 'unsafe_push_url',
    });
  });
});

describe('requestLocal (the health probes and site setup calls of the data plane)', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/slow') return; // never answers
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.setHeader('x-seen-host', req.headers.host ?? '');
        res.end(`${req.method} ${req.url} ${body}`);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as import('node:net').AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends the Host it is given to the loopback port and reads the answer', async () => {
    const r = await requestLocal(port, {
      method: 'POST',
      path: '/x?y=1',
      headers: { host: 'site.sites.localhost:8082' },
      body: 'hello',
      timeoutMs: 5_000,
    });
    expect(r).toMatchObject({ status: 200, body: 'POST /x?y=1 hello' });
    expect(r.headers['x-seen-host']).toBe('site.sites.localhost:8082');
  });

  it('keeps at most maxBodyBytes of the answer', async () => {
    expect((await requestLocal(port, { timeoutMs: 5_000, maxBodyBytes: 3 })).body).toBe('GET');
  });

  it('gives up on an idle socket with OutboundTimeout', async () => {
    await expect(requestLocal(port, { path: '/slow', timeoutMs: 200 })).rejects.toBeInstanceOf(OutboundTimeout);
  });
});
