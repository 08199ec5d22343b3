import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { type Browser, openBrowser } from './browser.js';
import { builtConsole } from './built-console.js';

/** Each reload of the console refreshes its session: that must neither log the operator out nor hide why. */
describe('reloading the console', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const dist = await builtConsole();
    t = await startPlatform({
      console: { dist_dir: dist },
      rate_limits: { auth: { max: 3, window_seconds: 600 } },
    });
    base = await t.platform.listen();
    browser = await openBrowser();
    page = browser.page;
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('stays logged in across more reloads than the login limit allows, and says so when a refresh is limited', async () => {
    await page.goto(`${base}/console/`);
    await page.getByLabel('Username or e-mail').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    for (let i = 0; i < 6; i++) {
      await page.reload();
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    }

    // Refused refreshes from this address use up its login bucket…
    let limited = false;
    for (let i = 0; i < 5 && !limited; i++) {
      const res = await t.request('POST', '/api/v1/auth/refresh', {
        body: { refresh_token: `guessed-refresh-token-${i}` },
      });
      limited = res.statusCode === 429;
    }
    expect(limited).toBe(true);
    // …so a tab whose refresh is refused for that is told to wait, not that its session ended.
    await page.evaluate(
      "sessionStorage.setItem('platform.console.refresh_token', 'a-refresh-token-nobody-issued')",
    );
    await page.reload();
    await page.getByText(/Too many requests, try again in \d+ s/).waitFor();
    expect(await page.getByText('Your session has ended').count()).toBe(0);
    expect(browser.problems).toEqual([]);
  });
});
