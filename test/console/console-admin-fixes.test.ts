import { rmSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { type Browser, openConsoleAsAdmin } from './browser.js';
import { builtConsole } from './built-console.js';

/**
 * Defects an administrator met in the console, each reproduced in Chromium and checked against the API:
 * what the page shows and sends must match what the platform stores.
 */
describe('the admin console keeps what the operator sees and sends in step with the platform', {
  timeout: 30_000,
}, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;
  let token: string;
  let repository: string;

  const open = async (label: string, heading: string) => {
    await page
      .getByRole('navigation', { name: 'Sections', exact: true })
      .getByRole('link', { name: label, exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  };

  beforeAll(async () => {
    const dist = await builtConsole();
    // A plugin whose configuration holds a list of strings.
    repository = tempRepository();
    writePlugin(
      repository,
      {
        name: 'list-demo',
        config_schema: {
          type: 'object',
          properties: { patterns: { type: 'array', items: { type: 'string' }, default: ['a.*'] } },
          additionalProperties: false,
        },
      },
      'export default { setup() {} };',
    );
    t = await startPlatform({ console: { dist_dir: dist }, plugins: { repositories: [repository] } });
    base = await t.platform.listen();
    token = await t.adminToken();
    browser = await openConsoleAsAdmin(base);
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (repository) rmSync(repository, { recursive: true, force: true });
  });

  it('editing a user just suspended on the same page keeps the suspension', async () => {
    await t.createUser('held-back');
    await open('Users', 'Users');
    await page.getByRole('searchbox').fill('held-back');
    await page.getByRole('link', { name: 'held-back', exact: true }).click();
    await page.getByRole('heading', { level: 2, name: 'held-back' }).waitFor();

    await page.locator('summary', { hasText: 'Suspend' }).click();
    const suspend = page.getByRole('form', { name: 'Suspend user' });
    await suspend.getByLabel('Reason', { exact: true }).fill('under review');
    await suspend.getByRole('button', { name: 'Suspend held-back' }).click();
    await page.getByRole('status').filter({ hasText: 'held-back is suspended' }).waitFor();

    // The edit form shows the status the user has now, not the one it had when the page opened…
    await page.locator('summary', { hasText: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit user' });
    expect(await edit.getByLabel('Status').inputValue()).toBe('suspended');
    // …so changing the name does not send the old status back and lift the suspension.
    await edit.getByLabel('Full name').fill('Held Back');
    await edit.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('heading', { level: 2, name: 'Held Back (held-back)' }).waitFor();
    const stored = await t.request('GET', '/api/v1/admin/users?search=held-back', { token });
    expect(stored.data.data.users[0]).toMatchObject({ full_name: 'Held Back', status: 'suspended' });
  });

  it('a list setting takes one entry per line, typed with Enter, and saves them all', async () => {
    await open('Configuration', 'Configuration');
    await page
      .getByRole('navigation', { name: 'Configuration sections' })
      .getByRole('button', { name: 'server', exact: true })
      .click();
    const form = page.getByRole('form', { name: 'Section server' });
    const proxies = form.getByLabel('trusted_proxies');
    await proxies.click();
    await page.keyboard.type('10.0.0.1');
    await page.keyboard.press('Enter');
    await page.keyboard.type('10.0.0.2');
    expect(await proxies.inputValue()).toBe('10.0.0.1\n10.0.0.2');
    await form.getByRole('button', { name: 'Save server' }).click();
    await form.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    const config = await t.request('GET', '/api/v1/admin/config', { token });
    expect(config.data.data.config.server.trusted_proxies).toEqual(['10.0.0.1', '10.0.0.2']);
    // Discard brings back what is stored, in the same box.
    await proxies.fill('10.0.0.9');
    await form.getByRole('button', { name: 'Discard changes' }).click();
    expect(await proxies.inputValue()).toBe('10.0.0.1\n10.0.0.2');
  });

  it("a list in a plugin's configuration takes one entry per line, typed with Enter", async () => {
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'list-demo', version: 'latest', config: { enabled: true } },
    });
    expect(installed.statusCode).toBeLessThan(300);
    await open('Plugins', 'Plugins');
    await page.getByRole('link', { name: 'list-demo', exact: true }).click();
    const form = page.getByRole('form', { name: 'Plugin configuration' });
    const patterns = form.getByLabel('patterns');
    await patterns.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('b.**');
    expect(await patterns.inputValue()).toBe('a.*\nb.**');
    await form.getByRole('button', { name: 'Save configuration' }).click();
    await page.getByRole('status').filter({ hasText: 'Configuration saved.' }).waitFor();
    const plugin = await t.request('GET', '/api/v1/admin/plugins/list-demo', { token });
    expect(plugin.data.data.plugin.configuration.patterns).toEqual(['a.*', 'b.**']);
  });

  it('the security figures follow a block and an unblock made on the same page', async () => {
    await open('Security', 'Security');
    const blockedFigure = page.locator('.stats > div', { hasText: 'blocked ips' }).locator('dd');
    await blockedFigure.filter({ hasText: /^0$/ }).waitFor();
    const form = page.getByRole('form', { name: 'Block an address' });
    await form.getByLabel('Address or range').fill('192.0.2.10');
    await form.getByRole('button', { name: 'Block', exact: true }).click();
    const row = page.locator('section[aria-labelledby="blocked-title"] tbody tr', { hasText: '192.0.2.10' });
    await row.waitFor();
    const status = await t.request('GET', '/api/v1/security/status', { token });
    expect(status.data.data.metrics.blocked_ips).toBe(1);
    // Well before the page's own 60 s refresh: the figure is reloaded by the action itself.
    await blockedFigure.filter({ hasText: /^1$/ }).waitFor({ timeout: 5_000 });
    await row.getByRole('button', { name: 'Unblock' }).click();
    await page
      .getByRole('dialog', { name: 'Unblock 192.0.2.10?' })
      .getByRole('button', { name: 'Unblock' })
      .click();
    await row.waitFor({ state: 'detached' });
    await blockedFigure.filter({ hasText: /^0$/ }).waitFor({ timeout: 5_000 });
  });

  it('an event emitted from the form appears among the stored events below it', async () => {
    await open('Events', 'Events');
    const stored = page.locator('section[aria-labelledby="history-title"] tbody');
    await stored.locator('tr').first().waitFor();
    await page.locator('summary', { hasText: 'Emit an event' }).click();
    const form = page.getByRole('form', { name: 'Emit event' });
    await form.getByLabel('Event type').fill('fixes.emitted');
    await form.getByRole('button', { name: 'Emit event' }).click();
    await form.getByRole('status').filter({ hasText: 'Emitted' }).waitFor();
    const api = await t.request('GET', '/api/v1/events?event_type=fixes.emitted', { token });
    expect(api.data.data.events).toHaveLength(1);
    // No Refresh click needed: the list is loaded again after the emit.
    await stored.getByRole('link', { name: 'fixes.emitted' }).waitFor({ timeout: 5_000 });
  });

  it('a confirmation opened from a table row shows its whole question, wide and narrow', async () => {
    const backup = await t.request('POST', '/api/v1/backup', { token, body: { include: ['configuration'] } });
    expect(backup.statusCode).toBeLessThan(300);
    // The archive is written in the background: the row is restorable once it is completed.
    await t.platform.context.tasks.settled(backup.data.data.backup_id);
    for (const [width, height] of [
      [1280, 900],
      [390, 844],
    ] as const) {
      await page.setViewportSize({ width, height });
      await page.goto(`${base}/console/backups`);
      await page.getByRole('heading', { level: 1, name: 'Backups' }).waitFor();
      await page.locator('tbody tr').first().getByRole('button', { name: 'Restore' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Restore now' }).waitFor();
      // Nothing in the dialog sticks out of it or out of its own box: the text wraps inside it.
      const cut = (await dialog.evaluate(
        (d) =>
          [...d.querySelectorAll('*')]
            .filter(
              (e) =>
                e.getBoundingClientRect().right > d.getBoundingClientRect().right + 1 ||
                e.scrollWidth > e.clientWidth + 1,
            )
            .map((e) => e.tagName.toLowerCase()),
        undefined,
      )) as string[];
      expect(cut, `at ${width} px`).toEqual([]);
      expect(await dialog.textContent()).toContain('A backup of the current state is taken first.');
      await page.keyboard.press('Escape');
      await dialog.waitFor({ state: 'hidden' });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('runs without a script error or a CSP refusal', () => {
    expect(browser.problems).toEqual([]);
  });
});
