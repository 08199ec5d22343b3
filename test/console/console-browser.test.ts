import { mkdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { type Browser, openBrowser } from './browser.js';
import { builtConsole } from './built-console.js';
import { DEMO_TOKEN, demoPlugins } from './demo-plugins.js';

const SHOTS = fileURLToPath(new URL('../../test-results/console/', import.meta.url));

/** Every section of the navigation: its link and the heading of its page. */
const PAGES: readonly [label: string, heading: string][] = [
  ['Overview', 'Overview'],
  ['Users', 'Users'],
  ['Plugins', 'Plugins'],
  ['Events', 'Events'],
  ['Subscriptions', 'Subscriptions'],
  ['Replay and purge', 'Replay and purge'],
  ['Tasks', 'Tasks'],
  ['Backups', 'Backups'],
  ['Security', 'Security'],
  ['Configuration', 'Configuration'],
  ['Maintenance', 'Maintenance'],
  ['Audit log', 'Audit log'],
  ['Logs', 'Logs'],
  ['Account', 'Account'],
];
const slug = (label: string) => label.toLowerCase().replaceAll(' ', '-');

/** A webhook target on a real socket that records what it receives. */
async function startReceiver(): Promise<{
  url: string;
  received: { headers: IncomingMessage['headers']; body: string }[];
  server: Server;
}> {
  const received: { headers: IncomingMessage['headers']; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString();
    });
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/hook`, received, server };
}

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('the admin console in a real browser', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;
  let token: string;
  let uploadPath: string;

  const shot = (name: string, fullPage = true) =>
    page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage });
  const open = async (label: string, heading: string) => {
    await page
      .getByRole('navigation', { name: 'Sections', exact: true })
      .getByRole('link', { name: label, exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  };
  /** Waits until nothing on the page is loading any more (ApiView marks loading with aria-busy). */
  const loaded = () => page.locator('main [aria-busy="true"]').first().waitFor({ state: 'detached' });
  /** How much wider than the window the page is (0: no sideways scrolling). */
  const overflow = async () =>
    (await page.evaluate('document.documentElement.scrollWidth - window.innerWidth')) as number;
  /** What sticks out to the right of the window (table cells scroll in their frame, unless taken out of the flow). */
  const stickingOut = async () =>
    (await page.evaluate(`[...document.querySelectorAll('body *')]
      .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
      .filter((e) => !e.closest('.table-wrap') || getComputedStyle(e).position === 'absolute')
      .slice(0, 5)
      .map((e) => e.tagName.toLowerCase() + (e.className ? '.' + e.className : ''))
      .join(', ')`)) as string;
  const focused = async () => (await page.evaluate('document.activeElement?.textContent ?? ""')) as string;

  beforeAll(async () => {
    // The folder holds this run's screenshots only.
    rmSync(SHOTS, { recursive: true, force: true });
    mkdirSync(SHOTS, { recursive: true });
    const dist = await builtConsole();
    const plugins = await demoPlugins();
    uploadPath = plugins.uploadPath;
    t = await startPlatform({ console: { dist_dir: dist }, plugins: { repositories: [plugins.repository] } });
    base = await t.platform.listen();
    token = await t.adminToken();
    browser = await openBrowser();
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('logs in with the keyboard alone and lands on the overview with live charts', async () => {
    await page.goto(`${base}/console/`);
    await page.getByRole('heading', { name: 'Platform console' }).waitFor();
    await shot('01-login');
    // The username field has focus on load; Tab moves to the password, Enter submits.
    await page.keyboard.type('admin');
    await page.keyboard.press('Tab');
    // Keyboard focus is visible: the focused field has the focus outline.
    expect(await page.evaluate('getComputedStyle(document.activeElement).outlineStyle')).toBe('solid');
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await page.getByRole('heading', { name: 'Health', exact: true }).waitFor();
    await loaded();
    expect(await page.getByText(/^Version \d/).count()).toBe(1);
    // uPlot charts from /api/v1/metrics: request rate, latency percentiles, memory and event rate.
    const captions = await page.locator('.chart figcaption').allTextContents();
    for (const title of ['Request rate', 'Latency', 'Memory', 'Event rate']) {
      expect(
        captions.some((c) => c.startsWith(title)),
        title,
      ).toBe(true);
    }
    expect(await page.locator('.chart canvas').count()).toBeGreaterThanOrEqual(4);
    const latency = await page.locator('.chart', { hasText: 'Latency' }).textContent();
    for (const p of ['p50', 'p95', 'p99']) expect(latency).toContain(p);
    await shot('02-overview');
  });

  it('stays logged in across a reload (refresh token in sessionStorage) and deep links survive it', async () => {
    await page.goto(`${base}/console/maintenance`);
    await page.getByRole('heading', { level: 1, name: 'Maintenance' }).waitFor();
    const stored = await page.evaluate('Object.keys(sessionStorage)');
    expect(stored).toContain('platform.console.refresh_token');
    // The access token lives in memory only: nothing else is stored.
    expect(await page.evaluate('Object.keys(localStorage)')).toEqual([]);
  });

  it('creates a user, finds it by search and opens it', async () => {
    await open('Users', 'Users');
    // A new page puts focus on its heading; Tab then walks the page in reading order.
    expect(await page.evaluate('document.activeElement?.id')).toBe('page-title');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Your API keys and sessions');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement?.type')).toBe('search');
    await page.locator('summary', { hasText: 'Create user' }).click();
    const form = page.getByRole('form', { name: 'Create user' });
    await form.getByLabel('Username', { exact: true }).fill('console-made');
    await form.getByLabel('E-mail', { exact: true }).fill('console-made@example.test');
    await form.getByLabel('Full name', { exact: true }).fill('Made In Console');
    await form.getByLabel('Password', { exact: true }).fill('console-password-1');
    await form.getByRole('button', { name: 'Create user' }).click();
    await page.getByRole('status').filter({ hasText: 'console-made' }).waitFor();
    const created = await t.request('GET', '/api/v1/admin/users?search=console-made', { token });
    expect(created.data.data.users.map((u: { username: string }) => u.username)).toEqual(['console-made']);
    await page.getByRole('searchbox').fill('console-made');
    await page.getByRole('link', { name: 'console-made' }).click();
    await page.getByRole('heading', { name: 'Made In Console (console-made)' }).waitFor();
    await page.locator('summary', { hasText: 'Reset password' }).click();
    const reset = page.getByRole('form', { name: 'Reset password' });
    await reset.getByRole('button', { name: 'Reset password' }).click();
    const temporary = await reset.getByTestId('once-secret').getByRole('textbox').inputValue();
    const login = await t.request('POST', '/api/v1/auth/login', {
      body: { username: 'console-made', password: temporary },
    });
    expect(login.statusCode).toBe(200);
    await page.locator('summary', { hasText: 'Suspend' }).click();
    const suspend = page.getByRole('form', { name: 'Suspend user' });
    await suspend.getByLabel('Reason', { exact: true }).fill('checked by the browser test');
    await suspend.getByRole('button', { name: 'Suspend console-made' }).click();
    await page.getByRole('status').filter({ hasText: 'console-made is suspended' }).waitFor();
    const after = await t.request('GET', `/api/v1/admin/users?search=console-made`, { token });
    expect(after.data.data.users[0].status).toBe('suspended');
    await shot('03-user-detail');
    await open('Users', 'Users');
    await page.getByRole('link', { name: 'admin', exact: true }).waitFor();
    await shot('03-users');
  });

  it('creates an API key and shows its full value exactly once', async () => {
    await open('Account', 'Account');
    const form = page.getByRole('form', { name: 'Create API key' });
    await form.getByLabel('Name').fill('console-key');
    await form.getByRole('button', { name: 'Create API key' }).click();
    const secret = page.getByTestId('once-secret');
    await secret.waitFor();
    const key = await secret.getByRole('textbox').inputValue();
    expect(key).toMatch(/^plat_/);
    const me = await t.request('GET', '/api/v1/auth/me', { apiKey: key });
    expect(me.statusCode).toBe(200);
    await shot('04-account');
    await secret.getByRole('button', { name: 'Done' }).click();
    await expect(page.getByTestId('once-secret').count()).resolves.toBe(0);
    // After dismissal only the masked preview remains on the page.
    expect(await page.content()).not.toContain(key);
  });

  it('installs a plugin from the repository and enables it', async () => {
    await open('Plugins', 'Plugins');
    const form = page.getByRole('form', { name: 'Install plugin' });
    await form.locator('option[value="console-demo"]').waitFor({ state: 'attached' });
    await form.getByLabel('Plugin').selectOption('console-demo');
    await form.getByLabel('Version').selectOption('1.0.0');
    // Installed disabled, so that enabling is the console's doing.
    await form.getByLabel('Enable after installing').uncheck();
    await form.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('status').filter({ hasText: 'console-demo installed.' }).waitFor();
    const row = page.locator('tr[data-plugin="console-demo"]');
    await row.getByRole('button', { name: 'Enable console-demo' }).click();
    await row.getByRole('button', { name: 'Disable console-demo' }).waitFor();
    const detail = await t.request('GET', '/api/v1/admin/plugins/console-demo', { token });
    expect(detail.data.data.plugin.enabled).toBe(true);
    await shot('05-plugins');
  });

  it("edits a plugin's configuration with its secret masked, and updates it with the task's progress", async () => {
    const set = await t.request('PUT', '/api/v1/plugins/console-demo', {
      token,
      body: { config: { greeting: 'hi', api_token: DEMO_TOKEN } },
    });
    expect(set.statusCode).toBe(200);
    await open('Plugins', 'Plugins');
    await page.getByRole('link', { name: 'console-demo' }).click();
    await page.getByRole('heading', { level: 1, name: 'Plugin console-demo' }).waitFor();
    const config = page.getByRole('form', { name: 'Plugin configuration' });
    const secret = config.getByLabel('api_token');
    await secret.waitFor();
    expect(await secret.getAttribute('type')).toBe('password');
    expect(await secret.inputValue()).not.toBe(DEMO_TOKEN);
    expect(await page.content()).not.toContain(DEMO_TOKEN);
    await config.getByLabel('greeting').fill('hello from the console');
    await config.getByRole('button', { name: 'Save configuration' }).click();
    await page.getByRole('status').filter({ hasText: 'Configuration saved.' }).waitFor();
    // The untouched secret went back masked and kept its value; the plugin was reloaded with the change.
    const state = await t.request('GET', '/api/v1/ext/console-demo/state', { token });
    expect(state.data.data).toEqual({
      version: '1.0.0',
      greeting: 'hello from the console',
      token_kept: true,
    });
    // Its log, written by the plugin itself.
    await page.locator('.log-lines').getByText('console-demo 1.0.0 ready').first().waitFor();
    const update = page.getByRole('form', { name: 'Update plugin' });
    await update.getByLabel('Target version').fill('1.1.0');
    await update.getByRole('button', { name: 'Update' }).click();
    const task = page.locator('.task');
    await task.getByTestId('task-status').getByText('completed').waitFor({ timeout: 20_000 });
    expect(await task.locator('progress').getAttribute('value')).toBe('100');
    expect(await task.locator('.steps').textContent()).toContain('download');
    // The page reloads the plugin when the task ends: the new version shows.
    await page.locator('.kv').getByText('1.1.0', { exact: true }).waitFor();
    const after = await t.request('GET', '/api/v1/ext/console-demo/state', { token });
    expect(after.data.data).toEqual({
      version: '1.1.0',
      greeting: 'hello from the console',
      token_kept: true,
    });
    await shot('05-plugin-detail');
  });

  it('installs a plugin from an uploaded package file, and disables it', async () => {
    await open('Plugins', 'Plugins');
    const form = page.getByRole('form', { name: 'Install plugin' });
    await form.getByLabel('Package file (.tgz)').check();
    await form.getByLabel('Package file', { exact: true }).setInputFiles(uploadPath);
    await form.getByRole('button', { name: 'Install' }).click();
    await page.getByRole('status').filter({ hasText: 'console-upload installed.' }).waitFor();
    const row = page.locator('tr[data-plugin="console-upload"]');
    await row.getByRole('button', { name: 'Disable console-upload' }).click();
    await row.getByRole('button', { name: 'Enable console-upload' }).waitFor();
    const list = await t.request('GET', '/api/v1/admin/plugins', { token });
    const upload = list.data.data.plugins.find((p: { id: string }) => p.id === 'console-upload');
    expect(upload).toMatchObject({ enabled: false, version: '2.0.0' });
  });

  it('shows an emitted event live in the events page, filtered by pattern, and opens its detail', async () => {
    await open('Events', 'Events');
    await page.locator('[data-testid="stream-status"][data-patterns="*"]').getByText('live').waitFor();
    await page.getByLabel('Patterns').fill('console.*');
    await page.getByRole('button', { name: 'Apply' }).click();
    // Live once the server has confirmed the new pattern.
    await page
      .locator('[data-testid="stream-status"][data-patterns="console.*"]')
      .getByText('live')
      .waitFor();
    const noise = await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'other.noise', source: 'browser-test', data: {} },
    });
    expect(noise.statusCode).toBe(201);
    const emitted = await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'console.check', source: 'browser-test', data: { order: 42 } },
    });
    expect(emitted.statusCode).toBe(201);
    const live = page.getByTestId('live-events');
    await live.getByRole('link', { name: 'console.check' }).waitFor();
    expect(await live.textContent()).toContain('"order":42');
    // Emitted first, but outside the pattern: not shown.
    expect(await live.getByText('other.noise').count()).toBe(0);
    await shot('06-events');
    await live.getByRole('link', { name: 'console.check' }).click();
    await page.getByRole('heading', { level: 1, name: 'Event' }).waitFor();
    await page.getByRole('heading', { name: 'Deliveries' }).waitFor();
    expect(await page.locator('.kv').textContent()).toContain(emitted.data.data.event.event_id);
    await shot('06-event-detail');
  });

  it('emits an event from the form and reports where it went', async () => {
    await open('Events', 'Events');
    await page.locator('summary', { hasText: 'Emit an event' }).click();
    const form = page.getByRole('form', { name: 'Emit event' });
    await form.getByLabel('Event type').fill('bad type!');
    await form.getByRole('button', { name: 'Emit event' }).click();
    await form.locator('.field-error').first().waitFor();
    await form.getByLabel('Event type').fill('console.form');
    await form.getByLabel('Data (JSON object)').fill('{"from": "form"}');
    await form.getByRole('button', { name: 'Emit event' }).click();
    await form
      .getByRole('status')
      .getByText(/Emitted evt_/)
      .waitFor();
    await page.getByTestId('live-events').getByRole('link', { name: 'console.form' }).waitFor();
  });

  it('creates a webhook subscription with its secret shown once, and shows its delivery', async () => {
    const receiver = await startReceiver();
    try {
      await open('Subscriptions', 'Subscriptions');
      await page.locator('summary', { hasText: 'Create a webhook subscription' }).click();
      const form = page.getByRole('form', { name: 'Create webhook subscription' });
      await form.getByLabel('Name').fill('console-hook');
      await form.getByLabel('Webhook URL').fill(receiver.url);
      await form.getByLabel('Event patterns').fill('console.*');
      await form.getByLabel('Rate limit (per second)').fill('5');
      await form.getByRole('button', { name: 'Create subscription' }).click();
      const secret = await page.getByTestId('once-secret').getByRole('textbox').inputValue();
      expect(secret.length).toBeGreaterThanOrEqual(8);
      const row = page.locator('tr', { hasText: 'console-hook' });
      await row.waitFor();
      await shot('07-subscriptions');
      await t.request('POST', '/api/v1/events', {
        token,
        body: { event_type: 'console.hooked', source: 'browser-test', data: {} },
      });
      await until(() => receiver.received.some((r) => r.body.includes('console.hooked')), 15_000);
      // The delivery shows in the subscription's counter once the list reloads.
      await until(async () => {
        await page.getByRole('button', { name: 'Refresh' }).click();
        await page.waitForTimeout(300);
        return (await row.getByTestId('events-delivered').textContent()) === '1';
      }, 15_000);
      await shot('07-subscriptions-delivered');
      expect(await row.getByTestId('success-rate').textContent()).toBe('100.0 %');
      // The subscription's page lists the delivery; the event's page shows the attempt.
      await row.getByRole('link', { name: 'console-hook' }).click();
      await page.getByRole('heading', { level: 1, name: 'Subscription' }).waitFor();
      const delivery = page
        .getByRole('table', { name: 'Deliveries' })
        .locator('tr', { hasText: 'console.hooked' });
      await delivery.getByText('delivered', { exact: true }).waitFor();
      expect(await delivery.textContent()).toContain('HTTP 200');
      await shot('07-subscription-detail');
      // Its webhook settings are fields: the rate limit given in the form among them.
      const rateLimit = page
        .locator('dt', { hasText: /^rate limit$/ })
        .locator('xpath=following-sibling::dd[1]');
      expect((await rateLimit.textContent())?.trim()).toBe('5');
      // The status filter asks the deliveries endpoint again: no failed ones, then the delivered one back.
      const statusFilter = page.locator('.filters').getByLabel('Status');
      await statusFilter.selectOption('failed');
      await page.getByRole('table', { name: 'Deliveries' }).getByText('No deliveries.').waitFor();
      await statusFilter.selectOption('delivered');
      await delivery.getByText('delivered', { exact: true }).waitFor();
      await delivery.getByRole('link', { name: 'console.hooked' }).click();
      await page.getByRole('heading', { level: 1, name: 'Event' }).waitFor();
      const attempt = page.getByRole('table', { name: 'Delivery attempts' }).locator('tbody tr');
      await attempt.getByText('delivered', { exact: true }).waitFor();
      expect(await attempt.textContent()).toContain('HTTP 200');
    } finally {
      receiver.server.close();
    }
  });

  it('pauses and resumes a subscription', async () => {
    await open('Subscriptions', 'Subscriptions');
    const row = page.locator('tr', { hasText: 'console-hook' });
    await row.getByRole('button', { name: 'Pause' }).click();
    await row.getByText('paused').waitFor();
    await row.getByRole('button', { name: 'Resume' }).click();
    await row.getByText('active').waitFor();
  });

  it('follows a running task and cancels it', async () => {
    // A replay paced at a minute between events stays running long enough to cancel.
    const replay = await t.request('POST', '/api/v1/events/replay', {
      token,
      body: { event_filter: { event_types: ['console.*'] }, delay_between_events_ms: 60_000 },
    });
    expect(replay.statusCode).toBe(202);
    const id = replay.data.data.task_id as string;
    await open('Tasks', 'Tasks');
    const row = page.locator(`tr[data-task="${id}"]`);
    await row.getByText('running', { exact: true }).waitFor();
    expect(await row.locator('progress').count()).toBe(1);
    await shot('10-tasks-running');
    await row.getByRole('button', { name: /^Cancel/ }).click();
    await row.getByText('cancelled', { exact: true }).waitFor();
    const task = await t.request('GET', `/api/v1/tasks/${id}`, { token });
    expect((task.data.data.task ?? task.data.data).status).toBe('cancelled');
  });

  it('shows configuration problems beside the field, then saves a valid change', async () => {
    await open('Configuration', 'Configuration');
    await page
      .getByRole('navigation', { name: 'Configuration sections' })
      .getByRole('button', { name: 'rate_limits' })
      .click();
    const form = page.getByRole('form', { name: 'Section rate_limits' });
    const authenticated = form.getByRole('group', { name: 'authenticated' });
    await authenticated.getByLabel('max').fill('0');
    await form.getByRole('button', { name: 'Save rate_limits' }).click();
    await form
      .locator('.field-invalid')
      .getByText(/greater or equal|>= 1|minimum/)
      .waitFor();
    await shot('08-config-error');
    await authenticated.getByLabel('max').fill('4321');
    await form.getByRole('button', { name: 'Save rate_limits' }).click();
    await form.getByRole('status').getByText('rate_limits.authenticated.max').waitFor();
    const cfg = await t.request('GET', '/api/v1/config?section=rate_limits', { token });
    expect(cfg.data.data.rate_limits.authenticated.max).toBe(4321);
    await shot('08-config');
  });

  it('turns maintenance mode on and off', async () => {
    await open('Maintenance', 'Maintenance');
    const form = page.getByRole('form', { name: 'Turn maintenance on' });
    await form.getByLabel('Message to users').fill('Upgrading the database');
    await form.getByRole('button', { name: 'Turn maintenance on' }).click();
    await page.getByTestId('maintenance-state').getByText('on', { exact: true }).waitFor();
    const on = await t.request('GET', '/api/v1/admin/system/maintenance', { token });
    expect(on.data.data).toMatchObject({ enabled: true, message: 'Upgrading the database' });
    await shot('09-maintenance-on');
    await page.getByRole('button', { name: 'Turn maintenance off' }).click();
    await page.getByTestId('maintenance-state').getByText('off', { exact: true }).waitFor();
    const off = await t.request('GET', '/api/v1/admin/system/maintenance', { token });
    expect(off.data.data.enabled).toBe(false);
  });

  it('blocks and unblocks an address, and runs a security scan to its findings', async () => {
    await open('Security', 'Security');
    const block = page.getByRole('form', { name: 'Block an address' });
    await block.getByLabel('Address or range').fill('203.0.113.0/24');
    await block.getByLabel('Reason').fill('browser test');
    await block.getByRole('button', { name: 'Block' }).click();
    const row = page.locator('tr', { hasText: '203.0.113.0/24' });
    await row.waitFor();
    const blocked = await t.request('GET', '/api/v1/admin/security/blocked-ips', { token });
    expect(blocked.data.data.blocked_ips.map((b: { ip_address: string }) => b.ip_address)).toContain(
      '203.0.113.0/24',
    );
    await row.getByRole('button', { name: 'Unblock' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Unblock' }).click();
    await row.waitFor({ state: 'detached' });
    await page
      .getByRole('form', { name: 'Start a security scan' })
      .getByRole('button', { name: 'Start scan' })
      .click();
    const result = page.getByTestId('scan-result');
    await result.getByText('completed').waitFor({ timeout: 20_000 });
    await result.getByText('Checks passed / run').waitFor();
    await shot('10-security-scan');
  });

  it('creates a backup and downloads its archive', async () => {
    await open('Backups', 'Backups');
    await page
      .getByRole('form', { name: 'Create backup' })
      .getByRole('button', { name: 'Create backup' })
      .click();
    await page
      .getByRole('status')
      .getByText(/Backup bkp_\S+ created/)
      .waitFor({ timeout: 20_000 });
    // The archive is written in the background: Download appears once the backup reads completed.
    const row = page.locator('tbody tr').first();
    await row.getByRole('button', { name: 'Download' }).waitFor({ timeout: 20_000 });
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      row.getByRole('button', { name: 'Download' }).click(),
    ]);
    expect(file.suggestedFilename()).toMatch(/^bkp_.*\.tar(\.gz)?$/);
    await shot('10-backups');
  });

  it('restores a backup only after a confirmation, which Escape cancels and the keyboard gives', async () => {
    const row = page.locator('tbody tr').first();
    const backupId = await row.getAttribute('data-backup');
    const restore = row.getByRole('button', { name: 'Restore' });
    await restore.click();
    const dialog = page.getByRole('dialog', { name: `Restore ${backupId}?` });
    await dialog.waitFor();
    await shot('10-backups-confirm', false);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    // Focus returns to the button that opened it, and nothing was started.
    expect(await focused()).toBe('Restore');
    expect(await page.getByText(/Restore of .* started/).count()).toBe(0);
    // Enter opens it again; focus starts on Cancel (the safe choice), Tab reaches the confirm button.
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    expect(await focused()).toBe('Cancel');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Restore now');
    await page.keyboard.press('Enter');
    await page.getByRole('status').getByText(`Restore of ${backupId} started.`).waitFor();
    await page.getByTestId('task-status').getByText('completed').waitFor({ timeout: 30_000 });
    await shot('10-backups-restored');
  });

  it('shows what the console did in the audit log', async () => {
    await open('Audit log', 'Audit log');
    await page.getByText('system.maintenance.enable', { exact: true }).first().waitFor();
    await page.getByLabel('Action').fill('system.maintenance.*');
    await page.getByText('system.maintenance.disable', { exact: true }).first().waitFor();
    // The filter applies after typing settles: other actions leave the table.
    await until(async () => (await page.getByText('config.update', { exact: true }).count()) === 0);
    await shot('10-audit-log');
  });

  it('shows every page at 1280 px wide with its data, and nothing "not available"', async () => {
    for (const [label, heading] of PAGES) {
      await open(label, heading);
      await loaded();
      expect(await page.locator('[data-state="not-available"]').count(), label).toBe(0);
      expect(await overflow(), `${label}: ${await stickingOut()}`).toBeLessThanOrEqual(0);
      await shot(`12-wide-${slug(label)}`);
    }
  });

  it('works at 390 px wide: the navigation folds behind a menu button and no page is wider than the screen', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(`${base}/console/`);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      const nav = page.getByRole('navigation', { name: 'Sections', exact: true });
      expect(await nav.isVisible()).toBe(false);
      await page.getByRole('button', { name: 'Menu' }).click();
      // The opened menu spans the width above the page, and the page does not get wider.
      const box = await nav.boundingBox();
      expect(box?.width).toBeGreaterThan(380);
      expect(box?.x).toBe(0);
      expect(await overflow()).toBe(0);
      await shot('11-mobile-menu', false);
      // Escape folds the menu again and gives focus back to its button.
      await page.keyboard.press('Escape');
      expect(await nav.isVisible()).toBe(false);
      expect(await focused()).toBe('Menu');
      for (const [label, heading] of PAGES) {
        if (!(await nav.isVisible())) await page.getByRole('button', { name: 'Menu' }).click();
        await nav.getByRole('link', { name: label, exact: true }).click();
        await page.getByRole('heading', { level: 1, name: heading }).waitFor();
        expect(await nav.isVisible(), label).toBe(false);
        await loaded();
        expect(
          (await page.evaluate('document.documentElement.scrollWidth')) as number,
          `${label} is wider than 390 px: ${await stickingOut()}`,
        ).toBeLessThanOrEqual(390);
        await shot(`13-narrow-${slug(label)}`);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });

  it('refreshes the access token silently a minute before it expires', async () => {
    // A controllable clock in the page: jump 14.5 minutes ahead instead of waiting for the 15-minute token.
    await page.clock.install();
    await page.goto(`${base}/console/account`);
    await page.getByRole('heading', { level: 1, name: 'Account' }).waitFor();
    const before = await page.evaluate("sessionStorage.getItem('platform.console.refresh_token')");
    const refreshed = page.waitForResponse(
      (r) => r.url().endsWith('/api/v1/auth/refresh') && r.status() === 200,
    );
    await page.clock.fastForward('14:30');
    await refreshed;
    await until(
      async () =>
        (await page.evaluate("sessionStorage.getItem('platform.console.refresh_token')")) !== before,
    );
    // The new token works: the next page loads its data.
    await open('Users', 'Users');
    await loaded();
    await page.getByRole('link', { name: 'admin', exact: true }).waitFor();
  });

  it('logs out: the session ends on the server and the tab forgets its refresh token', async () => {
    const refresh = await page.evaluate("sessionStorage.getItem('platform.console.refresh_token')");
    expect(refresh).toBeTruthy();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    expect(await page.evaluate("sessionStorage.getItem('platform.console.refresh_token')")).toBeNull();
    const reuse = await t.request('POST', '/api/v1/auth/refresh', {
      body: { refresh_token: refresh as string },
    });
    expect(reuse.statusCode).toBe(401);
  });

  it('met no script error and no content-security-policy refusal on the way', () => {
    expect(browser.problems).toEqual([]);
  });
});
