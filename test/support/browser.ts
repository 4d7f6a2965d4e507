import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { loadConfig } from '../../core/config';
import { projectRoot } from '../../core/paths';

/**
 * Debian's chromium, driven by playwright-core (which never downloads a browser). `.ci/run` installs
 * it with apt-get when it is missing; `CHROMIUM_PATH` points elsewhere.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where each page's screenshot goes (kept as CI artifacts): `<DATA_DIR>/console-screens/`. */
export const SCREENS_DIR = path.resolve(projectRoot(), loadConfig(process.env).DATA_DIR, 'console-screens');

/** One browser per test file; the caller closes it in `afterAll`. */
export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM_PATH}: install Debian's chromium (apt-get install -y --no-install-recommends chromium, as .ci/run does) or set CHROMIUM_PATH.`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // Tests run as root (as in CI), where chromium refuses to start without --no-sandbox.
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    timeout: 30_000,
  });
}

/** A fresh context (its own cookie jar) per account, so two accounts never share a session. */
export async function newAccountContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-GB' });
  context.setDefaultTimeout(15_000);
  context.setDefaultNavigationTimeout(15_000);
  return context;
}

/** Saves a full-page screenshot as `<SCREENS_DIR>/<name>.png` and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENS_DIR, { recursive: true });
  const file = path.join(SCREENS_DIR, `${name.replace(/[^A-Za-z0-9._-]+/g, '-')}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

interface AxeNode {
  target: unknown[];
  html: string;
  failureSummary?: string;
}
interface AxeViolation {
  id: string;
  impact?: string | null;
  help: string;
  helpUrl: string;
  nodes: AxeNode[];
}

/**
 * Screenshots the page, then runs axe-core on it and throws when any violation is `serious` or
 * `critical`, listing each rule, its help and the offending elements.
 */
export async function axeCheck(page: Page, name: string): Promise<void> {
  await screenshot(page, name);
  // Evaluated over the DevTools protocol, so the console's Content-Security-Policy stays in force.
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axe.source);
  const violations = (await page.evaluate(
    `window.axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)`,
  )) as AxeViolation[];
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length === 0) return;
  const lines = bad.map((v) => {
    const nodes = v.nodes
      .slice(0, 5)
      .map(
        (n) =>
          `      ${n.target.join(' ')}: ${n.html.slice(0, 160)}${n.failureSummary ? `\n        ${n.failureSummary.replace(/\n/g, '\n        ')}` : ''}`,
      )
      .join('\n');
    const more = v.nodes.length > 5 ? `\n      … and ${v.nodes.length - 5} more` : '';
    return `  [${v.impact}] ${v.id}: ${v.help} (${v.helpUrl})\n${nodes}${more}`;
  });
  throw new Error(`axe on page "${name}" (${page.url()}): ${bad.length} serious or critical violation(s)\n${lines.join('\n')}`);
}

/**
 * Polls until `check` passes (throws nothing) or `timeoutMs` passes; then throws the last failure,
 * prefixed with `what`, so a report says which accessible name and what the page showed instead.
 */
export async function eventually<T>(what: string, check: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (e) {
      if (Date.now() > until) throw new Error(`${what} (after ${timeoutMs} ms): ${(e as Error).message}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Waits until the locator's text matches `pattern`; the error quotes the text it last had. */
export async function untilText(locator: Locator, pattern: RegExp, what: string, timeoutMs = 15_000): Promise<string> {
  return eventually(
    what,
    async () => {
      const text = (await locator.first().textContent({ timeout: 1_000 }))?.replace(/\s+/g, ' ').trim() ?? '';
      if (!pattern.test(text)) throw new Error(`text is "${text}", expected ${pattern}`);
      return text;
    },
    timeoutMs,
  );
}

/** Waits until the locator is visible; the error names it by what the contract calls it. */
export async function visible(locator: Locator, what: string, timeoutMs = 15_000): Promise<Locator> {
  try {
    await locator.first().waitFor({ state: 'visible', timeout: timeoutMs });
  } catch {
    throw new Error(`not visible after ${timeoutMs} ms: ${what}`);
  }
  return locator.first();
}
