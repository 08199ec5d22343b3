import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { resolveChromium } from './chromium-path.js';

describe('the console tests’ browser', () => {
  it('comes with the project’s own dependencies when no system Chromium may be used', async () => {
    // CHROMIUM_PATH naming nothing: neither it nor /usr/bin/chromium is consulted.
    const found = await resolveChromium({ CHROMIUM_PATH: '' });
    expect(found.origin).toBe('bundled');
    expect(found.path).not.toMatch(/^\/usr\//);
    const browser = await chromium.launch({
      executablePath: found.path,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      timeout: 20_000,
    });
    try {
      const page = await browser.newPage();
      await page.setContent('<main><h1>Platform</h1><button>Sign in</button></main>');
      expect(await page.getByRole('button', { name: 'Sign in' }).count()).toBe(1);
      expect(await page.textContent('h1')).toBe('Platform');
    } finally {
      await browser.close();
    }
  });
});
