import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/** Debian's Chromium with the flags this machine needs (no sandbox as root, no calls home). */
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
    executablePath: process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium',
    headless: true,
    args: ARGS,
    viewport: { width, height },
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
