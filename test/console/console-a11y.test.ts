import { rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_PASSWORD, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { axeCheck } from './axe-check.js';
import { type Browser, openBrowser } from './browser.js';
import { builtConsole } from './built-console.js';

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

/** What has focus: `body` when nothing does (the defect), else a short description of the element. */
const ACTIVE = `(() => {
  const a = document.activeElement;
  if (!a || a === document.body || a === document.documentElement) return 'body';
  const name = a.getAttribute('aria-label') || a.getAttribute('name') || (a.textContent || '').trim().slice(0, 40);
  return a.tagName.toLowerCase() + (a.id ? '#' + a.id : '') + ' ' + name;
})()`;

/**
 * The console by keyboard and under axe-core (issue 28, items 5–9): focus never drops to the page body after an
 * action, secrets and invalid fields take focus, the live tail is announced politely and can be muted, wide
 * tables scroll by keyboard, and axe finds no violation on any page, light and dark, wide and at 640 px.
 */
describe('the admin console by keyboard and under axe-core', { timeout: 40_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;
  let token: string;
  let receiver: Server;
  let receiverUrl: string;
  let repository: string;

  const active = async () => (await page.evaluate(ACTIVE)) as string;
  /** Waits until what has focus is no longer moving, and returns it. */
  const settledFocus = async () => {
    let last = '';
    for (let i = 0; i < 20; i++) {
      await page.waitForTimeout(150);
      const now = await active();
      if (now === last) return now;
      last = now;
    }
    return last;
  };
  const loaded = () => page.locator('main [aria-busy="true"]').first().waitFor({ state: 'detached' });
  const open = async (label: string, heading: string) => {
    await page
      .getByRole('navigation', { name: 'Sections', exact: true })
      .getByRole('link', { name: label, exact: true })
      .click();
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await loaded();
  };
  const logIn = async () => {
    await page.getByLabel('Username or e-mail').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.locator('h1#page-title').waitFor();
  };
  /** Presses Tab (or Shift+Tab) until `target` has focus, failing as soon as focus reaches the body. */
  const tabTo = async (target: Locator, back = false) => {
    await target.evaluate((el) => el.setAttribute('data-kb-target', ''));
    try {
      for (let i = 0; i < 80; i++) {
        await page.keyboard.press(back ? 'Shift+Tab' : 'Tab');
        const where = (await page.evaluate(
          `document.activeElement?.hasAttribute('data-kb-target') ? 'target' : ${ACTIVE}`,
        )) as string;
        expect(where, `after ${i + 1} Tab presses`).not.toBe('body');
        if (where === 'target') return;
      }
      throw new Error('Tab never reached the target');
    } finally {
      await target.evaluate((el) => el.removeAttribute('data-kb-target'));
    }
  };
  const axe = async (where: string) => {
    await loaded();
    const { violations, passed } = await axeCheck(page);
    expect(violations, where).toEqual([]);
    // The rules did run (a page where nothing applied would pass vacuously).
    expect(passed, where).toBeGreaterThan(10);
  };

  beforeAll(async () => {
    const dist = await builtConsole();
    repository = tempRepository();
    writePlugin(
      repository,
      {
        name: 'a11y-demo',
        config_schema: {
          type: 'object',
          properties: {
            greeting: { type: 'string', default: 'hi' },
            retries: { type: 'integer', default: 3 },
          },
          additionalProperties: false,
        },
      },
      'export default { setup() {} };',
    );
    t = await startPlatform({ console: { dist_dir: dist }, plugins: { repositories: [repository] } });
    base = await t.platform.listen();
    token = await t.adminToken();
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    browser = await openBrowser();
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    receiver?.close();
    if (repository) rmSync(repository, { recursive: true, force: true });
  });

  it('walks login → every page → create a user → emit an event → log out by keyboard, focus never on the body', async () => {
    await page.goto(`${base}/console/`);
    await page.getByLabel('Username or e-mail').waitFor();
    expect(await active()).toContain('username');
    await page.keyboard.type('admin');
    await page.keyboard.press('Tab');
    await page.keyboard.type(ADMIN_PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await settledFocus()).toContain('h1#page-title');

    const nav = page.getByRole('navigation', { name: 'Sections', exact: true });
    for (const [label, heading] of PAGES) {
      // The navigation comes just before the content: back from the page heading to the section's link.
      await tabTo(nav.getByRole('link', { name: label, exact: true }), true);
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      expect(await settledFocus(), label).toBe(`h1#page-title ${heading}`);
    }

    await tabTo(nav.getByRole('link', { name: 'Users', exact: true }), true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    await tabTo(page.locator('summary', { hasText: 'Create user' }));
    await page.keyboard.press('Enter');
    const create = page.getByRole('form', { name: 'Create user' });
    await tabTo(create.getByLabel('Username'));
    await page.keyboard.type('kb-walker');
    await tabTo(create.getByRole('textbox', { name: 'E-mail' }));
    await page.keyboard.type('kb-walker@example.com');
    await tabTo(create.getByRole('textbox', { name: 'Password' }));
    await page.keyboard.type('kb-walker-password-1');
    await tabTo(create.getByRole('button', { name: 'Create user' }));
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'User kb-walker created.' }).waitFor();
    expect(await settledFocus()).not.toBe('body');
    const made = await t.request('GET', '/api/v1/admin/users?search=kb-walker', { token });
    expect(made.data.data.users).toHaveLength(1);

    await tabTo(nav.getByRole('link', { name: 'Events', exact: true }), true);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
    await tabTo(page.locator('summary', { hasText: 'Emit an event' }));
    await page.keyboard.press('Enter');
    const emit = page.getByRole('form', { name: 'Emit event' });
    await tabTo(emit.getByLabel('Event type'));
    await page.keyboard.type('keyboard.walked');
    await tabTo(emit.getByRole('button', { name: 'Emit event' }));
    await page.keyboard.press('Enter');
    await emit
      .getByRole('status')
      .getByText(/Emitted evt_/)
      .waitFor();
    expect(await settledFocus()).not.toBe('body');

    await tabTo(page.getByRole('button', { name: 'Log out' }), true);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    expect(await settledFocus()).toContain('input');
    expect(await active()).toContain('username');
    await page.getByRole('status').filter({ hasText: 'You have logged out.' }).waitFor();
  });

  // Some 30 axe runs: 21 s on a quiet machine, 39–40 s (the suite's limit) on one shared with other builds, where
  // it timed out and left the page wide open for the tests after it. Its own, wider limit.
  it('finds no axe-core violation on any page: light at 1280 px, dark at 640 px, login included', {
    timeout: 120_000,
  }, async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.emulateMedia({ colorScheme: 'light' });
    await axe('login, light');
    await logIn();
    const user = await t.createUser('axe-subject');
    const emitted = await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'axe.checked', source: 'a11y-test', data: { n: 1 } },
    });
    const eventId = emitted.data.data.event.event_id as string;
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'a11y-demo', version: 'latest', config: { enabled: true } },
    });
    expect(installed.statusCode, installed.body).toBeLessThan(300);
    const sub = await t.request('POST', '/api/v1/events/subscriptions', {
      token,
      body: { name: 'axe-hook', event_patterns: ['axe.*'], webhook_config: { url: receiverUrl } },
    });
    expect(sub.statusCode, sub.body).toBe(201);
    const subscriptionId = sub.data.data.subscription.subscription_id as string;
    // A replay paced at a minute between events: a task that stays running.
    const replay = await t.request('POST', '/api/v1/events/replay', {
      token,
      body: { event_filter: { event_types: ['axe.*'] }, delay_between_events_ms: 60_000 },
    });
    expect(replay.statusCode, replay.body).toBe(202);
    const taskId = replay.data.data.task_id as string;
    const details: [path: string, heading: string][] = [
      [`/users/${user.id}`, 'User'],
      [`/events/${eventId}`, 'Event'],
      ['/plugins/a11y-demo', 'Plugin'],
      [`/subscriptions/${subscriptionId}`, 'Subscription'],
      [`/tasks/${taskId}`, 'Task'],
      ['/overview/details', 'Service details'],
    ];
    for (const [scheme, width] of [
      ['light', 1280],
      ['dark', 640],
    ] as const) {
      await page.setViewportSize({ width, height: 900 });
      await page.emulateMedia({ colorScheme: scheme });
      for (const [label, heading] of PAGES) {
        if (width < 700) {
          await page.getByRole('button', { name: 'Menu' }).click();
        }
        await open(label, heading);
        await axe(`${label}, ${scheme}, ${width} px`);
      }
      for (const [path, heading] of details) {
        await page.goto(`${base}/console${path}`);
        await page.getByRole('heading', { level: 1, name: heading }).waitFor();
        await axe(`${path}, ${scheme}, ${width} px`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 900 });
    // Fourteen sections and six detail pages, twice: more than the suite's 40 s on a loaded machine.
  });

  it('keeps focus on the user page after Suspend, and puts it on the temporary password shown once', async () => {
    const user = await t.createUser('focus-subject');
    await page.goto(`${base}/console/users/${user.id}`);
    await page.getByRole('heading', { level: 2, name: 'focus-subject' }).waitFor();

    await page.locator('summary', { hasText: 'Suspend' }).click();
    const suspend = page.getByRole('form', { name: 'Suspend user' });
    await suspend.getByLabel('Reason', { exact: true }).fill('keyboard check');
    await suspend.getByRole('button', { name: 'Suspend focus-subject' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'focus-subject is suspended' }).waitFor();
    // The button is disabled now (the user is suspended): focus goes to the result.
    expect(await settledFocus()).toMatch(/^p .*focus-subject is suspended/);

    await page.locator('summary', { hasText: 'Reset password' }).click();
    const reset = page.getByRole('form', { name: 'Reset password' });
    await reset.getByRole('button', { name: 'Reset password' }).focus();
    await page.keyboard.press('Enter');
    const box = page.getByTestId('once-secret').getByRole('textbox');
    await box.waitFor();
    await settledFocus();
    expect(await box.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    // Selected, ready to copy.
    expect(await page.evaluate('String(window.getSelection())')).toBe(await box.inputValue());
  });

  it('puts focus on a new API key shown once', async () => {
    await open('Account', 'Account');
    const form = page.getByRole('form', { name: 'Create API key' });
    await form.getByLabel('Name').fill('focus-key');
    await form.getByRole('button', { name: 'Create API key' }).focus();
    await page.keyboard.press('Enter');
    const box = page.getByTestId('once-secret').getByRole('textbox');
    await box.waitFor();
    await settledFocus();
    expect(await box.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    expect(await box.inputValue()).toMatch(/\S{20,}/);
  });

  it('moves focus to the first field the server refused, tied to its message; a good save keeps focus', async () => {
    await open('Configuration', 'Configuration');
    await page
      .getByRole('navigation', { name: 'Configuration sections' })
      .getByRole('button', { name: 'server' })
      .click();
    const form = page.getByRole('form', { name: 'Section server' });
    const port = form.locator('input[name="server.port"]');
    await port.fill('-5');
    await form.getByRole('button', { name: 'Save server' }).focus();
    await page.keyboard.press('Enter');
    await form.getByRole('alert').waitFor();
    await settledFocus();
    expect(await port.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true);
    expect(await port.getAttribute('aria-invalid')).toBe('true');
    const describedBy = (await port.getAttribute('aria-describedby')) ?? '';
    const message = (await page.evaluate(
      `document.getElementById(${JSON.stringify(describedBy.split(' ')[0] ?? '')})?.textContent ?? ''`,
    )) as string;
    expect(message.length).toBeGreaterThan(0);

    await page
      .getByRole('navigation', { name: 'Configuration sections' })
      .getByRole('button', { name: 'webhooks' })
      .click();
    const webhooks = page.getByRole('form', { name: 'Section webhooks' });
    await webhooks.getByLabel('retry_delay_scale').fill('0.25');
    await webhooks.getByRole('button', { name: 'Save webhooks' }).focus();
    await page.keyboard.press('Enter');
    await webhooks.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    expect(await settledFocus()).not.toBe('body');
  });

  it('after Unblock from a row, focus goes to the row that took its place, then to the table', async () => {
    for (const ip of ['198.51.100.1', '198.51.100.2']) {
      const res = await t.request('POST', '/api/v1/admin/security/block-ip', {
        token,
        body: { ip_address: ip, reason: 'focus test', duration_hours: 0 },
      });
      expect(res.statusCode, res.body).toBeLessThan(300);
    }
    await open('Security', 'Security');
    const table = page.locator('section.table-wrap[aria-label="Blocked addresses table"]');
    const rows = table.locator('tbody tr');
    await rows.filter({ hasText: '198.51.100.2' }).waitFor();
    const first = (await rows.first().locator('code').textContent()) ?? '';
    const second = first === '198.51.100.1' ? '198.51.100.2' : '198.51.100.1';

    const unblockByKeyboard = async (ip: string) => {
      await rows.filter({ hasText: ip }).getByRole('button', { name: 'Unblock' }).focus();
      await page.keyboard.press('Enter');
      const dialog = page.getByRole('dialog', { name: `Unblock ${ip}?` });
      await dialog.waitFor();
      await page.keyboard.press('Tab');
      await page.keyboard.press('Enter');
      await rows.filter({ hasText: ip }).waitFor({ state: 'detached' });
    };
    await unblockByKeyboard(first);
    await settledFocus();
    const focusedRow = await page.evaluate('document.activeElement?.closest("tr")?.textContent ?? ""');
    expect(focusedRow).toContain(second);
    expect(await active()).toContain('Unblock');

    await unblockByKeyboard(second);
    await table.getByText('No address is blocked.').waitFor();
    expect(await settledFocus()).toBe('section Blocked addresses table');
  });

  it('announces new live-tail rows politely, at most one summary every few seconds, and can be muted', async () => {
    await open('Events', 'Events');
    await page.getByTestId('stream-status').getByText('live').waitFor();
    const region = page.getByTestId('live-announcement');
    expect(await region.getAttribute('aria-live')).toBe('polite');
    // Every text the region takes, with when.
    await page.evaluate(`(() => {
      const el = document.querySelector('[data-testid="live-announcement"]');
      const seen = (window.announced = []);
      new MutationObserver(() => {
        if (el.textContent) seen.push([Date.now(), el.textContent]);
      }).observe(el, { childList: true, subtree: true, characterData: true });
    })()`);
    const emit = (type: string) =>
      t.request('POST', '/api/v1/events', {
        token,
        body: { event_type: type, source: 'a11y-test', data: {} },
      });
    const rows = page.getByTestId('live-events');
    await emit('tail.one');
    await rows.getByRole('link', { name: 'tail.one' }).waitFor();
    await region.getByText('1 new event').waitFor();
    for (const n of [1, 2, 3]) await emit(`tail.burst${n}`);
    await rows.getByRole('link', { name: 'tail.burst3' }).waitFor();
    await region.getByText('3 new events').waitFor({ timeout: 8_000 });
    const announced = (await page.evaluate('window.announced')) as [number, string][];
    expect(announced.map(([, text]) => text)).toEqual(['1 new event', '3 new events']);
    const [[firstAt], [secondAt]] = announced as [[number, string], [number, string]];
    expect(secondAt - firstAt).toBeGreaterThanOrEqual(4_500);

    const mute = page.getByRole('button', { name: 'Mute announcements' });
    await mute.click();
    expect(await mute.getAttribute('aria-pressed')).toBe('true');
    await emit('tail.muted');
    await rows.getByRole('link', { name: 'tail.muted' }).waitFor();
    // Past the next announcement window: still nothing said.
    await page.waitForTimeout(5_200);
    expect(((await page.evaluate('window.announced')) as unknown[]).length).toBe(2);
    expect(await region.textContent()).toBe('');
  });

  it('at 640 px the wide tables scroll by keyboard to their last column; legends, date picker and landmarks work by keyboard', async () => {
    const sub = await t.request('POST', '/api/v1/events/subscriptions', {
      token,
      body: { name: 'a11y-hook', event_patterns: ['wide.*'], webhook_config: { url: receiverUrl } },
    });
    expect(sub.statusCode, sub.body).toBe(201);
    const emitted = await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'wide.table', source: 'a11y-test', data: { a: 'x'.repeat(80) } },
    });
    const eventId = emitted.data.data.event.event_id as string;
    for (let i = 0; ; i++) {
      const ev = await t.request('GET', `/api/v1/events/${eventId}`, { token });
      if (ev.data.data.event.delivery_info?.delivery_attempts?.length) break;
      if (i > 100) throw new Error(`no delivery attempt: ${ev.body}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.setViewportSize({ width: 640, height: 900 });

    const scrollsToLastColumn = async (name: string) => {
      const region = page.locator(`section.table-wrap[aria-label="${name}"]`);
      await region.locator('tbody tr').first().waitFor();
      expect(await region.getAttribute('tabindex')).toBe('0');
      await region.focus();
      expect(await region.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
      for (let i = 0; i < 40; i++) await page.keyboard.press('ArrowRight');
      await page.waitForTimeout(200);
      const [frameRight, lastRight] = await region.evaluate((el) => [
        el.getBoundingClientRect().right,
        el.querySelector('thead th:last-child')?.getBoundingClientRect().right ?? Number.POSITIVE_INFINITY,
      ]);
      expect(lastRight, name).toBeLessThanOrEqual(frameRight + 1);
    };
    await page.goto(`${base}/console/audit`);
    await page.getByRole('heading', { level: 1, name: 'Audit log' }).waitFor();
    await scrollsToLastColumn('Audit log table');
    await page.goto(`${base}/console/events/${eventId}`);
    await page.getByRole('heading', { level: 1, name: 'Event' }).waitFor();
    await scrollsToLastColumn('Delivery attempts table');

    await page.setViewportSize({ width: 1280, height: 900 });
    // The expiry date picker's focus ring: the console's 3 px outline, by keyboard.
    await open('Account', 'Account');
    const expires = page.getByRole('form', { name: 'Create API key' }).getByLabel('Expires');
    await tabTo(expires);
    const ring = (await page.evaluate(`(() => {
      const s = getComputedStyle(document.activeElement);
      return { style: s.outlineStyle, width: Number.parseFloat(s.outlineWidth), shadow: s.boxShadow };
    })()`)) as { style: string; width: number; shadow: string };
    expect(ring.style).toBe('solid');
    expect(ring.width).toBeGreaterThanOrEqual(3);
    expect(ring.shadow).not.toBe('none');

    // A chart's series are shown and hidden with buttons, by keyboard.
    await open('Overview', 'Overview');
    const legend = page.getByRole('group', { name: /^Latency.*series shown/ });
    const p95 = legend.getByRole('button', { name: /p95/ });
    await tabTo(p95);
    expect(await p95.getAttribute('aria-pressed')).toBe('true');
    await page.keyboard.press('Space');
    expect(await p95.getAttribute('aria-pressed')).toBe('false');
    await page.keyboard.press('Enter');
    expect(await p95.getAttribute('aria-pressed')).toBe('true');
    // The service details' table: a caption, and every header cell with its scope.
    await page.getByRole('link', { name: 'Service details' }).click();
    await page.getByRole('heading', { level: 1, name: 'Service details' }).waitFor();
    await loaded();
    const health = page.getByRole('table', { name: 'Health checks' });
    expect(await health.locator('caption').count()).toBe(1);
    expect(await health.locator('th:not([scope])').count()).toBe(0);
    expect(await health.locator('th[scope="row"]').count()).toBeGreaterThan(0);

    // The Security page's navigation landmarks each have their own name.
    await open('Security', 'Security');
    const names = (await page.evaluate(
      `[...document.querySelectorAll('nav, [role="navigation"]')].map((n) => n.getAttribute('aria-label'))`,
    )) as string[];
    expect(names.length).toBeGreaterThanOrEqual(3);
    expect(new Set(names).size).toBe(names.length);
    expect(browser.problems).toEqual([]);
  });
});
