import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { createSubscription } from '../webhooks/webhook-fixtures.js';
import { type Browser, openConsoleAsAdmin } from './browser.js';
import { builtConsole } from './built-console.js';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** The console's page of the event catalogue, in Chromium, against what the API holds. */
describe('the event catalogue in the console', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;
  let token: string;

  beforeAll(async () => {
    const dist = await builtConsole();
    t = await startPlatform({ console: { dist_dir: dist } });
    base = await t.platform.listen();
    token = await t.adminToken();
    const put = await t.request('PUT', '/api/v1/events/types/payment.captured', {
      token,
      body: {
        description: 'A card payment was captured',
        schema: {
          type: 'object',
          required: ['payment_id', 'amount'],
          properties: { payment_id: { type: 'string' }, amount: { type: 'number', minimum: 0 } },
        },
        examples: [{ payment_id: 'pay_1', amount: 12.5 }],
      },
    });
    expect(put.statusCode, put.body).toBe(201);
    await createSubscription(t, token, {
      name: 'ledger-sync',
      event_patterns: ['payment.*'],
      delivery_method: 'webhook',
      webhook_config: { url: 'http://127.0.0.1:9/hook' },
    });
    browser = await openConsoleAsAdmin(base);
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('lists each type with its description, schema, examples and listeners, from the navigation', async () => {
    await page
      .getByRole('navigation', { name: 'Sections', exact: true })
      .getByRole('link', { name: 'Event types', exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: 'Event types' }).waitFor();
    const card = page.getByRole('article', { name: 'payment.captured' });
    await card.waitFor();
    expect(await card.textContent()).toContain('A card payment was captured');
    const listeners = card.getByRole('list', { name: 'Listeners of payment.captured' });
    await listeners.getByRole('link', { name: 'ledger-sync' }).waitFor();

    await card.locator('summary', { hasText: 'Schema of the data' }).click();
    const schema = JSON.parse((await card.getByTitle('Schema of payment.captured').textContent()) ?? '');
    const api = await t.request('GET', '/api/v1/events/types/payment.captured', { token });
    expect(schema).toEqual(api.data.data.event_type.schema);
    await card.locator('summary', { hasText: 'Examples (1)' }).click();
    expect(JSON.parse((await card.getByTitle('Example 1').textContent()) ?? '')).toEqual({
      payment_id: 'pay_1',
      amount: 12.5,
    });
    expect(await page.getByTestId('catalogue-mode').textContent()).toContain('accepted unchecked');
  });

  it('fits a 390 px wide screen with the schema open', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${base}/console/event-types`);
    const card = page.getByRole('article', { name: 'payment.captured' });
    await card.waitFor();
    await card.locator('summary', { hasText: 'Schema of the data' }).click();
    const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    expect(width).toBeLessThanOrEqual(390);
    const cardRight = await card.evaluate((e) => e.getBoundingClientRect().right);
    expect(cardRight).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('has no axe-core violation with the schema and examples open, light and dark', async () => {
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.goto(`${base}/console/event-types`);
      const card = page.getByRole('article', { name: 'payment.captured' });
      await card.waitFor();
      await card.locator('summary', { hasText: 'Schema of the data' }).click();
      await card.locator('summary', { hasText: 'Examples (1)' }).click();
      const { violations, passed } = (await page.evaluate(`(async () => {
        if (!window.axe) { ${AXE}\n }
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return { passed: r.passes.length, violations: r.violations.map((v) => v.id + ': ' + v.help) };
      })()`)) as { violations: string[]; passed: number };
      expect(violations, scheme).toEqual([]);
      expect(passed, scheme).toBeGreaterThan(10);
    }
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('runs without a script error or a CSP refusal', () => {
    expect(browser.problems).toEqual([]);
  });
});
