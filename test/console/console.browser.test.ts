/**
 * The web console in a real browser (Debian's chromium through playwright-core) against the whole
 * platform, by the accessible names of the contract (docs/contracts.md, "The console"):
 * sign in, create a site and watch it reach running without a reload, open it, create a recovery
 * point, upload an image and see it from the CDN, visit every page with an axe-core pass, keep two
 * accounts apart, sign out. Screenshots land in `<DATA_DIR>/console-screens/`.
 */
import { randomBytes } from 'node:crypto';
import sharp from 'sharp';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { axeCheck, eventually, launchBrowser, newAccountContext, screenshot, visible } from '../support/browser';
import { startTestPlatform, type TestPlatform } from '../support/platform';
import { runningSite } from '../publisher/support';

jest.setTimeout(120_000);

const NAV_LINKS = ['Sites', 'Commerce', 'Assets', 'Activity', 'Mail', 'Billing'] as const;

let t: TestPlatform;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let owner: { key: string; accountId: string };
let consoleUrl: string;
/** Uncaught script errors per page, reported by the last test. */
const pageErrors: string[] = [];
/** The site the flow creates in the form (set by the create test; made over REST when that failed). */
let site: { id: string; name: string } | undefined;

beforeAll(async () => {
  // First, so a machine without chromium fails at once with the reason.
  browser = await launchBrowser();
  // Slow enough that each provisioning step is visible in the page (about 2.5 s for a site).
  t = await startTestPlatform({ SIMULATED_STEP_DELAY_MS: '400' });
  consoleUrl = `${t.bridgeUrl}/console/`;
  owner = await t.createKey();
  context = await newAccountContext(browser);
  page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(`${page.url()}: ${e.message}`));
}, 120_000);

afterEach(async () => {
  const name = expect.getState().currentTestName ?? 'test';
  if (page && !page.isClosed()) await screenshot(page, `end-${name.slice(0, 80)}`).catch(() => undefined);
});

afterAll(async () => {
  await browser?.close();
  await t?.stop();
});

/** The path of a console page: `path('sites')` is `/console/sites`. */
const at = (p = '') => `${t.bridgeUrl}/console/${p}`;

async function signIn(p: Page, key: string): Promise<void> {
  await p.goto(consoleUrl);
  const field = await visible(p.getByLabel('API key', { exact: true }), "text field 'API key' on the sign-in page");
  await field.fill(key);
  await p.getByRole('button', { name: 'Sign in', exact: true }).click();
  await visible(p.getByRole('button', { name: 'Sign out', exact: true }), "button 'Sign out' after signing in");
}

/** Signs the owner in again when an earlier step left the page elsewhere. */
async function ensureSignedIn(): Promise<void> {
  if (await page.getByRole('button', { name: 'Sign out', exact: true }).count()) return;
  await signIn(page, owner.key);
}

/** Follows a navigation link by name and waits for its address. */
async function navigate(linkName: string, pathSuffix: string): Promise<void> {
  const nav = page.getByRole('navigation');
  const link = await visible(
    nav.getByRole('link', { name: linkName, exact: true }),
    `link '${linkName}' in the navigation landmark`,
  );
  await link.click();
  await eventually(`address after following '${linkName}'`, async () => {
    if (new URL(page.url()).pathname !== `/console/${pathSuffix}`)
      throw new Error(`at ${page.url()}, expected /console/${pathSuffix}`);
  });
}

/** The contract of every signed-in page: landmarks, the six links, `Sign out` and a title naming the page. */
async function expectSignedInChrome(p: Page, titleNames: RegExp): Promise<void> {
  await visible(p.getByRole('main'), "'main' landmark");
  const missing: string[] = [];
  const nav = p.getByRole('navigation');
  if ((await nav.count()) === 0) missing.push("'navigation' landmark");
  for (const name of NAV_LINKS) {
    if ((await nav.getByRole('link', { name, exact: true }).count()) === 0)
      missing.push(`link '${name}' in the navigation landmark`);
  }
  if ((await p.getByRole('button', { name: 'Sign out', exact: true }).count()) === 0) missing.push("button 'Sign out'");
  const title = await eventually(
    `document title naming the page (${titleNames})`,
    async () => {
      const got = await p.title();
      if (!titleNames.test(got)) throw new Error(`title is "${got}"`);
      return got;
    },
    5_000,
  ).catch((e: Error) => e);
  if (title instanceof Error) missing.push(title.message);
  if (missing.length) throw new Error(`${p.url()} lacks: ${missing.join('; ')}`);
}

/** The current session cookie of `ctx` as a `Cookie` header for calls from outside the browser. */
async function cookieHeader(ctx: BrowserContext): Promise<string> {
  return (await ctx.cookies(t.bridgeUrl)).map((c) => `${c.name}=${c.value}`).join('; ');
}

/** A same-origin request from inside the page (the session cookie rides along, as the console's own would). */
async function fetchInPage(p: Page, path: string): Promise<{ status: number; body: any }> {
  return p.evaluate(async (u: string) => {
    const r = await fetch(u, { credentials: 'same-origin' });
    const text = await r.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: r.status, body: body as any };
  }, path);
}

describe('the web console in a real browser', () => {
  it('signs in: a wrong key shows the API message in an alert; the right key gives an HttpOnly SameSite=Strict session', async () => {
    const served = await fetch(consoleUrl);
    if (served.status !== 200) {
      throw new Error(`GET /console/ answered ${served.status}: the bridge does not serve the console (is dist/console/ built?)`);
    }
    await page.goto(consoleUrl);
    await visible(page.getByLabel('API key', { exact: true }), "text field 'API key' for a visitor without a session");
    await visible(page.getByRole('button', { name: 'Sign in', exact: true }), "button 'Sign in'");
    await axeCheck(page, 'sign-in');

    // A key of the right shape that the platform does not know.
    const wrong = `${owner.key.slice(0, -4)}${owner.key.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    await page.getByLabel('API key', { exact: true }).fill(wrong);
    const answered = page.waitForResponse(
      (r) => new URL(r.url()).pathname === '/console/api/session' && r.request().method() === 'POST',
    );
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const res = await answered;
    expect(res.status()).toBe(401);
    const message: string = ((await res.json()) as any)?.error?.message;
    expect(typeof message).toBe('string');
    const alert = await visible(
      page.getByRole('alert').filter({ hasText: message }),
      `role 'alert' carrying the API's message "${message}"`,
    );
    expect(await alert.textContent()).toContain(message);
    await axeCheck(page, 'sign-in-wrong-key');

    await page.getByLabel('API key', { exact: true }).fill(owner.key);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await visible(page.getByRole('button', { name: 'Sign out', exact: true }), "button 'Sign out' after signing in");

    const cookies = await context.cookies(t.bridgeUrl);
    const session = cookies.filter((c) => c.httpOnly && c.sameSite === 'Strict');
    expect(session.length).toBeGreaterThanOrEqual(1);
    // The key is never kept by the browser: not in storage, not in the address.
    const stored = await page.evaluate(() => {
      const g = globalThis as any;
      return JSON.stringify([{ ...g.localStorage }, { ...g.sessionStorage }, g.location.href, g.document.cookie]);
    });
    expect(stored).not.toContain(owner.key);
    expect(cookies.map((c) => c.value).join(' ')).not.toContain(owner.key);
    const who = await fetch(`${t.bridgeUrl}/console/api/session`, { headers: { cookie: await cookieHeader(context) } });
    expect(who.status).toBe(200);
  });

  it('creates a site from the form and sees its status reach running in the Sites table without a reload', async () => {
    await ensureSignedIn();
    await navigate('Sites', 'sites');
    await expectSignedInChrome(page, /sites/i);
    await axeCheck(page, 'sites');

    // Proves there is no reload: a full page load forgets this.
    await page.evaluate(() => ((globalThis as any).__consoleNoReload = true));
    await (await visible(page.getByRole('button', { name: 'New site', exact: true }), "button 'New site'")).click();
    const name = `Console ${randomBytes(3).toString('hex')}`;
    await (
      await visible(page.getByRole('textbox', { name: 'Name', exact: true }), "text field 'Name' in the new-site form")
    ).fill(name);

    const runtime = await visible(
      page.getByRole('combobox', { name: 'Runtime version', exact: true }),
      "combobox 'Runtime version'",
    );
    const catalog = await t.rest('GET', '/api/v1/publisher/runtime-options', { key: owner.key });
    const preferred = catalog.body.data.find((o: any) => o.is_default).version as string;
    const shown = await runtime.evaluate((el: any) =>
      el.tagName === 'SELECT'
        ? `${el.value} ${el.selectedOptions[0]?.textContent ?? ''}`
        : el.tagName === 'INPUT'
          ? el.value
          : el.textContent,
    );
    expect(`combobox 'Runtime version' shows: ${shown}`).toContain(preferred);
    await axeCheck(page, 'sites-new-site-form');
    await page.getByRole('button', { name: 'Create site', exact: true }).click();

    const table = page.getByRole('table', { name: 'Sites', exact: true });
    const row = table.getByRole('row').filter({ hasText: name });
    await visible(row, `row holding '${name}' in table 'Sites'`);
    // Every status the row shows, in order, until it says running.
    const seen: string[] = [];
    await eventually(
      `status of '${name}' in table 'Sites' reaching running`,
      async () => {
        const text = ((await row.first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
        if (seen[seen.length - 1] !== text) seen.push(text);
        if (!/\brunning\b/i.test(text)) throw new Error(`row shows: ${seen.join(' → ')}`);
      },
      30_000,
    );
    expect(await page.evaluate(() => (globalThis as any).__consoleNoReload)).toBe(true);
    // Provisioning takes seconds here: the row showed a status before running (progress arrives live).
    expect(`statuses seen: ${seen.join(' → ')}`).toMatch(/→/);

    const nameLink = row.getByRole('link', { name, exact: true });
    const href = await (await visible(nameLink, `link '${name}' (the site's name) in its row`)).getAttribute('href');
    const projectId = /\/console\/sites\/([0-9a-f-]{36})$/.exec(new URL(href!, page.url()).pathname)?.[1];
    expect(`name link to ${href}`).toMatch(/\/console\/sites\/[0-9a-f-]{36}$/);
    site = { id: projectId!, name };
    const meta = await t.rest('GET', `/api/v1/publisher/projects/${projectId}/metadata`, { key: owner.key });
    expect(meta.status).toBe(200);
    expect(meta.body.data.project.name).toBe(name);
    const open = await visible(
      row.getByRole('link', { name: 'Open site', exact: true }),
      `link 'Open site' in the row of '${name}'`,
    );
    expect(await open.getAttribute('href')).toBe(meta.body.data.installation.site_url);
    await axeCheck(page, 'sites-running');
  });

  it('opens the site page and creates a recovery point whose row appears live', async () => {
    await ensureSignedIn();
    if (!site) {
      const name = `Console REST ${randomBytes(3).toString('hex')}`;
      site = { id: await runningSite(t, owner.key, { name }), name };
    }
    const { id, name } = site;
    await navigate('Sites', 'sites');
    const row = page.getByRole('table', { name: 'Sites', exact: true }).getByRole('row').filter({ hasText: name });
    await (await visible(row.getByRole('link', { name, exact: true }), `link '${name}' in table 'Sites'`)).click();
    await eventually('address of the site page', async () => {
      if (new URL(page.url()).pathname !== `/console/sites/${id}`) throw new Error(`at ${page.url()}`);
    });
    await visible(page.getByRole('heading', { name, exact: true }), `heading '${name}'`);
    await expectSignedInChrome(page, new RegExp(`${name}|site`, 'i'));
    await axeCheck(page, 'site');

    await page.evaluate(() => ((globalThis as any).__consoleNoReload = true));
    await (
      await visible(page.getByRole('button', { name: 'Create recovery point', exact: true }), "button 'Create recovery point'")
    ).click();
    const points = page.getByRole('table', { name: 'Recovery points', exact: true });
    const dataRows = points.getByRole('row').filter({ has: page.getByRole('cell') });
    await eventually(
      "a row in table 'Recovery points'",
      async () => {
        const n = await dataRows.count();
        if (n < 1) throw new Error(`table 'Recovery points' ${(await points.count()) ? `has ${n} data rows` : 'is absent'}`);
      },
      30_000,
    );
    expect(await page.evaluate(() => (globalThis as any).__consoleNoReload)).toBe(true);
    const listed = await t.rest('GET', `/api/v1/publisher/projects/${id}/recovery-points`, { key: owner.key });
    expect(listed.body.data).toHaveLength(1);
    await axeCheck(page, 'site-recovery-point');
  });

  it('uploads a PNG on Assets and shows it by its key, as an img from the CDN', async () => {
    await ensureSignedIn();
    await navigate('Assets', 'assets');
    await expectSignedInChrome(page, /assets/i);
    await axeCheck(page, 'assets');

    const fileName = `pixel-${randomBytes(3).toString('hex')}.png`;
    const png = await sharp({ create: { width: 48, height: 32, channels: 3, background: { r: 30, g: 120, b: 200 } } })
      .png()
      .toBuffer();
    const input = page.getByLabel('Upload', { exact: true });
    if ((await input.count()) === 0) throw new Error("no file input labelled 'Upload' on /console/assets");
    await input.first().setInputFiles({ name: fileName, mimeType: 'image/png', buffer: png });

    const asset = await eventually(
      `the uploaded ${fileName} in GET /api/v1/assets`,
      async () => {
        const list = await t.rest('GET', '/api/v1/assets?limit=100', { key: owner.key });
        const assets: any[] = list.body?.data?.assets ?? [];
        const found = assets.find((a) => typeof a.key === 'string' && a.key.endsWith(fileName));
        if (!found) throw new Error(`status ${list.status}, ${assets.length} assets, none named ${fileName}`);
        return found;
      },
      30_000,
    );
    const key: string = asset.key;
    await visible(page.getByText(key), `the asset's key '${key}' shown on the page`);
    const img = await visible(page.getByRole('img', { name: key, exact: true }), `img with alt '${key}'`, 30_000);
    const src = (await img.getAttribute('src')) ?? '';
    const cdnUrl = t.platform.cdnUrl!;
    expect(`src ${src}`).toContain(`src ${cdnUrl}/`);
    // The thumbnail really arrived from the CDN.
    await eventually(
      `img '${key}' loaded from ${src}`,
      async () => {
        const w = await img.evaluate((el: any) => (el.complete ? el.naturalWidth : 0));
        if (!(w > 0)) throw new Error('naturalWidth is 0 (not loaded)');
      },
      15_000,
    );
    await axeCheck(page, 'assets-uploaded');
  });

  it.each([
    ['Commerce', 'commerce'],
    ['Activity', 'activity'],
    ['Mail', 'mail'],
    ['Billing', 'billing'],
  ])('%s: landmarks, navigation, Sign out, a title naming the page and no serious axe violation', async (name, slug) => {
    await ensureSignedIn();
    await navigate(name, slug);
    await expectSignedInChrome(page, new RegExp(name, 'i'));
    await axeCheck(page, slug);
  });

  it("a second account's browser context sees none of the first account's sites", async () => {
    const other = await t.createKey();
    const otherCtx = await newAccountContext(browser);
    try {
      const p = await otherCtx.newPage();
      p.on('pageerror', (e) => pageErrors.push(`${p.url()} (second account): ${e.message}`));
      const ownName = `Other ${randomBytes(3).toString('hex')}`;
      await runningSite(t, other.key, { name: ownName });
      await signIn(p, other.key);
      await p.goto(at('sites'));
      const table = p.getByRole('table', { name: 'Sites', exact: true });
      await visible(
        table.getByRole('row').filter({ hasText: ownName }),
        `the second account's own site '${ownName}' in table 'Sites'`,
      );
      const firstName = site?.name;
      if (firstName) expect(await table.getByRole('row').filter({ hasText: firstName }).count()).toBe(0);
      expect(await table.getByRole('row').filter({ hasText: 'Console ' }).count()).toBe(0);
      await screenshot(p, 'second-account-sites');
      if (site) {
        // Its cookie reaches the API as its own key: the first account's project does not exist for it.
        const meta = await fetchInPage(p, `/api/v1/publisher/projects/${site.id}/metadata`);
        expect(meta.status).toBe(404);
        await p.goto(at(`sites/${site.id}`));
        await visible(p.getByRole('main'), "'main' landmark on another account's site page");
        await p.waitForTimeout(1_500);
        expect(await p.getByRole('heading', { name: site.name, exact: true }).count()).toBe(0);
        await screenshot(p, 'second-account-foreign-site');
      }
    } finally {
      await otherCtx.close();
    }
  });

  it('signs out: the server ends the session, the sign-in page shows, and the old cookie answers 401', async () => {
    await ensureSignedIn();
    const cookie = await cookieHeader(context);
    const before = await fetch(`${t.bridgeUrl}/console/api/session`, { headers: { cookie } });
    expect(before.status).toBe(200);
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await visible(page.getByLabel('API key', { exact: true }), "text field 'API key' after signing out");
    await visible(page.getByRole('button', { name: 'Sign in', exact: true }), "button 'Sign in' after signing out");
    await screenshot(page, 'signed-out');
    const after = await fetch(`${t.bridgeUrl}/console/api/session`, { headers: { cookie } });
    expect(after.status).toBe(401);
    // A signed-in address now shows the sign-in page too.
    await page.goto(at('sites'));
    await visible(page.getByLabel('API key', { exact: true }), "text field 'API key' at /console/sites without a session");
  });

  it('raised no uncaught script error on any page', () => {
    expect(pageErrors).toEqual([]);
  });
});
