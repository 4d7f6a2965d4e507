import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { contentDir, databaseFile, ghostEnv, prepareContent } from '../../dataplane/runtimes/ghost';

describe('data plane Ghost site layout', () => {
  let work: string;
  const release = (v: string) => {
    const dir = path.join(work, 'runtimes', v);
    mkdirSync(path.join(dir, 'content', 'themes', 'casper'), { recursive: true });
    mkdirSync(path.join(dir, 'content', 'themes', 'source'), { recursive: true });
    return dir;
  };
  beforeEach(() => (work = mkdtempSync(path.join(tmpdir(), 'ghost-layout-'))));
  afterEach(() => rmSync(work, { recursive: true, force: true }));

  it('refuses to prepare a content directory whose themes (or any part) the site replaced with a link', async () => {
    const site = path.join(work, 'site');
    const r1 = release('5.130.5');
    await prepareContent(r1, site);
    const elsewhere = path.join(work, 'platform-owned');
    mkdirSync(elsewhere);
    rmSync(path.join(contentDir(site), 'themes'), { recursive: true, force: true });
    symlinkSync(elsewhere, path.join(contentDir(site), 'themes'));
    await expect(prepareContent(r1, site)).rejects.toThrow(/themes is not a plain directory/);
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it("gives a site its own content directory and links the release's themes, re-pointing them on a release change", async () => {
    const site = path.join(work, 'site');
    const r1 = release('5.130.5');
    await prepareContent(r1, site);
    for (const sub of ['data', 'images', 'logs', 'settings', 'themes'])
      expect(lstatSync(path.join(contentDir(site), sub)).isDirectory()).toBe(true);
    expect(readlinkSync(path.join(contentDir(site), 'themes', 'casper'))).toBe(path.join(r1, 'content', 'themes', 'casper'));
    // A theme the site uploaded is its own directory and survives a release change.
    mkdirSync(path.join(contentDir(site), 'themes', 'mine'));
    writeFileSync(path.join(contentDir(site), 'themes', 'mine', 'package.json'), '{}');
    const r2 = release('5.130.6');
    await prepareContent(r2, site);
    expect(readlinkSync(path.join(contentDir(site), 'themes', 'casper'))).toBe(path.join(r2, 'content', 'themes', 'casper'));
    expect(lstatSync(path.join(contentDir(site), 'themes', 'mine')).isDirectory()).toBe(true);
    // Idempotent.
    await prepareContent(r2, site);
    expect(readlinkSync(path.join(contentDir(site), 'themes', 'source'))).toBe(path.join(r2, 'content', 'themes', 'source'));
  });

  it('configures the process for its own port, SQLite file, content path and public address', () => {
    const env = ghostEnv(
      {
        id: 's',
        runtimeDir: '/rt',
        dir: '/sites/s',
        url: 'http://s.sites.localhost:8082/',
        config: { mail__transport: 'SMTP' },
      },
      40123,
    );
    expect(env).toMatchObject({
      NODE_ENV: 'production',
      url: 'http://s.sites.localhost:8082/',
      server__port: '40123',
      database__client: 'sqlite3',
      database__connection__filename: databaseFile('/sites/s'),
      paths__contentPath: '/sites/s/content',
      mail__transport: 'SMTP',
    });
    expect(databaseFile('/sites/s')).toBe('/sites/s/content/data/ghost.db');
  });
});
