import { chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveSandbox } from '../../dataplane/sandbox';
import { sandboxPreloadFile } from '../../dataplane/sandbox-preload';
import { Supervisor } from '../../dataplane/supervisor';
import { parentWatchFile, preloadFile, privateDir } from '../../dataplane/supervisor-preload';

/** docs/decisions/0273-tenant-sandbox.md: when the sandbox is required, and where the code every workload loads first comes from. */

describe('the sandbox is required in production', () => {
  const spec = { id: 'w', script: 'server.mjs', cwd: '/tmp', sandbox: { mounts: [], memoryMb: 64 } };

  it('refuses a tenant workload, naming what is missing, when bubblewrap is not there', async () => {
    const r = resolveSandbox({ ...process.env, NODE_ENV: 'production', PLATFORM_BWRAP: '/nonexistent/bwrap' });
    expect(r.sandbox).toBeNull();
    expect(r.refusal).toMatch(/refusing to start a tenant workload: .*bubblewrap/);
    const sup = new Supervisor({ sandbox: r.sandbox, sandboxRefusal: r.refusal });
    await expect(sup.add(spec)).rejects.toThrow(/bubblewrap/);
    await sup.shutdown();
  });

  it('refuses PLATFORM_SANDBOX=off in production, and with PLATFORM_SANDBOX=on anywhere', () => {
    expect(resolveSandbox({ ...process.env, NODE_ENV: 'production', PLATFORM_SANDBOX: 'off' }).refusal).toMatch(
      /PLATFORM_SANDBOX=off/,
    );
    expect(
      resolveSandbox({ ...process.env, NODE_ENV: 'development', PLATFORM_SANDBOX: 'on', PLATFORM_BWRAP: '/nope' }).refusal,
    ).toMatch(/bubblewrap/);
  });

  it('in development runs without it only when told or when it cannot be set up (a warning, no refusal)', () => {
    const off = resolveSandbox({ ...process.env, NODE_ENV: 'development', PLATFORM_SANDBOX: 'off' });
    expect(off).toMatchObject({ sandbox: null, refusal: null });
    // This machine (and CI) can set it up: tests run with it on.
    expect(resolveSandbox({ ...process.env, PLATFORM_SANDBOX: undefined }).sandbox).not.toBeNull();
  });
});

describe('preloads come from a directory only the platform can write (defect 5)', () => {
  let dir: string;
  beforeEach(() => {
    dir = path.join(mkdtempSync(path.join(tmpdir(), 'preload-')), 'private');
  });
  afterEach(() => rmSync(path.dirname(dir), { recursive: true, force: true }));

  it('is not the system temporary directory, and is mode 0700', () => {
    const file = parentWatchFile();
    expect(file.startsWith(tmpdir() + path.sep)).toBe(false);
    expect(lstatSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(sandboxPreloadFile().startsWith(path.dirname(file))).toBe(true);
  });

  it('never loads or writes through a link or a changed file planted at its name', () => {
    privateDir(dir);
    const planted = path.join(path.dirname(dir), 'planted.cjs');
    writeFileSync(planted, 'process.exit(66); // planted\n');
    const source = "'use strict';\n// a preload\n";
    // Its name is the content's hash: plant a link there.
    const file = preloadFile('probe', source, dir);
    rmSync(file);
    symlinkSync(planted, file);
    expect(preloadFile('probe', source, dir)).toBe(file);
    expect(lstatSync(file).isFile()).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(source);
    expect(readFileSync(planted, 'utf8')).toContain('planted');
    // A changed file at the name is replaced too.
    writeFileSync(file, 'process.exit(66);\n');
    expect(readFileSync(preloadFile('probe', source, dir), 'utf8')).toBe(source);
  });

  it('refuses a directory another user owns', () => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chownSync(dir, 4242, 4242);
    expect(() => privateDir(dir)).toThrow(/not a directory owned by this user/);
  });
});

describe('the sandbox preload: ingress on the workload socket, egress only by declaration', () => {
  it('listens on the socket instead of PORT, and sends a declared host (by name or address) to its egress socket', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'preload-egress-'));
    try {
      const egressPath = path.join(dir, 'egress-0.sock');
      const egress = net.createServer((c) => c.end('relay says hi')).listen(egressPath);
      await new Promise((r) => egress.once('listening', r));
      const config = path.join(dir, 'sandbox.json');
      const listen = path.join(dir, 'http.sock');
      writeFileSync(config, JSON.stringify({ listen, egress: [{ host: 'relay.example.test', port: 2525, path: egressPath }] }));
      const child = `
        const net = require('node:net'); const dns = require('node:dns');
        const read = (s) => new Promise((r) => { let b = ''; s.on('data', (d) => (b += d)); s.on('end', () => r(b)); s.on('error', (e) => r(e.code)); });
        (async () => {
          const out = {};
          out.lookup = (await dns.promises.lookup('relay.example.test')).address;
          out.resolve4 = await new Promise((r) => dns.resolve4('relay.example.test', (e, a) => r(e ? e.code : a[0])));
          out.byName = await read(net.connect(2525, 'relay.example.test'));
          out.byAddress = await read(net.connect({ host: out.resolve4, port: 2525 }));
          out.other = await read(net.connect(2526, '127.0.0.1'));
          const server = net.createServer((c) => c.end('served')).listen(Number(process.env.PORT), '127.0.0.1', () => {
            out.listening = server.address();
            process.stdout.write(JSON.stringify(out));
            server.close();
          });
        })();`;
      // Asynchronously: this process answers the egress socket meanwhile.
      const r = await new Promise<{ stdout: string; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, ['--require', sandboxPreloadFile(), '-e', child], {
          env: { PATH: process.env.PATH, PORT: '45123', PLATFORM_SANDBOX_CONFIG: config },
        });
        let stdout = '';
        let stderr = '';
        c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
        c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        c.on('exit', () => resolve({ stdout, stderr }));
      });
      egress.close();
      if (!r.stdout) throw new Error(r.stderr);
      const out = JSON.parse(r.stdout);
      expect(out).toEqual({
        lookup: '127.255.0.1',
        resolve4: '127.255.0.1',
        byName: 'relay says hi',
        byAddress: 'relay says hi',
        other: 'ECONNREFUSED',
        listening: listen,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
