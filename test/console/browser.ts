import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { inject } from 'vitest';
import { ADMIN_PASSWORD } from '../helpers/test-platform.js';

/**
 * Chromium (the one test/console/chromium-setup.ts chose: CHROMIUM_PATH, the system's, or the bundled build)
 * with the flags this machine needs (no sandbox as root, no calls home).
 */
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  page: Page;
  /** Uncaught page errors and CSP refusals seen so far (failed resource loads are expected: 404 probes). */
  problems: string[];
  close(): Promise<void>;
}

export async function openBrowser(width = 1280, height = 900): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'platform-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: inject('chromium').path,
    headless: true,
    args: ARGS,
    viewport: { width, height },
    // A browser started under LANG=C.UTF-8 may report the language `en-US@posix`, which Intl refuses (uPlot
    // formats with navigator.language as it loads): the tests read English pages in a well-formed locale.
    locale: 'en-US',
    timeout: 20_000,
  });
  context.setDefaultTimeout(10_000);
  const page = context.pages()[0] ?? (await context.newPage());
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Refused to|Content Security Policy/i.test(msg.text()))
      problems.push(`console: ${msg.text()}`);
  });
  return {
    context,
    page,
    problems,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** A browser on the console at `base`, logged in as the bootstrap admin, on the Overview. */
export async function openConsoleAsAdmin(base: string): Promise<Browser> {
  const browser = await openBrowser();
  const { page } = browser;
  await page.goto(`${base}/console/`);
  await page.getByLabel('Username or e-mail').fill('admin');
  await page.getByLabel('Password').fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
  return browser;
}
