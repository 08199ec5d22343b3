import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from '../webhooks/webhook-fixtures.js';
import { axeCheck } from './axe-check.js';
import { type Browser, openConsoleAsAdmin } from './browser.js';
import { builtConsole } from './built-console.js';

/**
 * A subscription's page in Chromium. Resend and "Recover failed since…" against the platform's
 * POST …/deliveries/{delivery_id}/resend (202 { delivery_id, event_id, status: pending }) and
 * POST …/recover (202 { task_id }): failed deliveries reach the receiver again once it takes them. The edit
 * form's rate limit (PATCH /events/subscriptions/{id}) read back through the API; every attempt of a delivery
 * (GET …/deliveries/{delivery_id}/attempts) opened and closed by keyboard under its row, axe-core clean.
 */
describe("a subscription's page in the console", { timeout: 40_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;
  let token: string;
  let receiver: Receiver;
  let refusing = true;
  let subId: string;

  const deliveries = async () =>
    (await t.request('GET', `/api/v1/events/subscriptions/${subId}/deliveries`, { token })).data.data
      .deliveries as { delivery_id: string; event_id: string; status: string }[];

  beforeAll(async () => {
    const dist = await builtConsole();
    t = await startPlatform({ ...FAST_WEBHOOKS, console: { dist_dir: dist } });
    base = await t.platform.listen();
    token = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = () => ({ status: refusing ? 503 : 200 });
    subId = (
      await createSubscription(t, token, {
        name: 'flaky-target',
        event_patterns: ['again.*'],
        webhook_config: {
          url: `${receiver.url}/hook`,
          retry_policy: { max_attempts: 1, retry_delay_seconds: 1, exponential_backoff: false },
        },
      })
    ).id;
    for (let i = 0; i < 3; i++)
      await emit(t, token, { event_type: 'again.tick', source: 'test', data: { i } });
    await until(
      async () => (await deliveries()).every((d) => d.status === 'failed'),
      'every delivery failed',
    );
    browser = await openConsoleAsAdmin(base);
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  it('Resend queues one failed delivery again and it is delivered', async () => {
    refusing = false;
    await page.goto(`${base}/console/subscriptions/${subId}`);
    await page.getByRole('heading', { level: 1, name: 'Subscription' }).waitFor();
    const [target] = await deliveries();
    const row = page.locator(`tr[data-delivery="${target!.delivery_id}"]`);
    const resend = row.getByRole('button', { name: /^Resend/ });
    await resend.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('status').filter({ hasText: 'is queued again' }).waitFor();
    // A resend is a new delivery of the same event (docs/webhooks.md); the failed one stays listed as failed.
    await until(async () => {
      const now = await deliveries();
      return now.some(
        (d) =>
          d.event_id === target!.event_id &&
          d.delivery_id !== target!.delivery_id &&
          d.status === 'delivered',
      );
    }, 'the resent delivery delivered');
    expect((await deliveries()).filter((d) => d.status === 'failed')).toHaveLength(3);
    expect(receiver.at('/hook')).toHaveLength(4);
    // The page shows the new delivery, delivered.
    await page.getByRole('button', { name: 'Refresh deliveries' }).click();
    await page
      .getByRole('table', { name: 'Deliveries' })
      .getByText('delivered', { exact: true })
      .first()
      .waitFor();
    expect(browser.problems).toEqual([]);
  });

  it('Recover failed since… starts a task that queues every failed delivery again, followed to its end', async () => {
    const form = page.getByRole('form', { name: 'Recover failed deliveries' });
    const since = new Date(Date.now() - 3_600_000);
    const local = new Date(since.getTime() - since.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await form.getByLabel('Failed since').fill(local);
    await form.getByRole('button', { name: 'Recover failed deliveries' }).click();
    await page
      .locator('.task')
      .getByTestId('task-status')
      .filter({ hasText: 'completed' })
      .waitFor({ timeout: 20_000 });
    // The two events whose delivery failed and was not resent go again, as new deliveries.
    await until(
      async () => (await deliveries()).filter((d) => d.status === 'delivered').length === 3,
      'every failed event delivered',
    );
    expect(receiver.at('/hook')).toHaveLength(6);
    expect(browser.problems).toEqual([]);
  });

  it('changes the rate limit of an existing subscription, and removes it when the field is emptied', async () => {
    const limited = (
      await createSubscription(t, token, {
        name: 'limited-target',
        event_patterns: ['limited.*'],
        webhook_config: { url: `${receiver.url}/limited`, rate_limit: 5 },
      })
    ).id;
    const subscription = async () =>
      (await t.request('GET', `/api/v1/events/subscriptions/${limited}`, { token })).data.data
        .subscription as { webhook_config: { rate_limit: number | null } };
    await page.goto(`${base}/console/subscriptions/${limited}`);
    await page.getByRole('heading', { level: 1, name: 'Subscription' }).waitFor();
    const form = page.getByRole('form', { name: 'Edit subscription' });
    const field = form.getByLabel('Rate limit (per second)');
    expect(await field.inputValue()).toBe('5');
    await field.fill('2.5');
    await field.press('Enter');
    await page.getByRole('status').filter({ hasText: 'The rate limit is now 2.5 per second.' }).waitFor();
    expect((await subscription()).webhook_config.rate_limit).toBe(2.5);
    await field.fill('');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'The rate limit is removed.' }).waitFor();
    expect((await subscription()).webhook_config.rate_limit).toBeNull();
    expect(browser.problems).toEqual([]);
  });

  it('shows every attempt of a delivery under its row, opened and closed by keyboard', async () => {
    const retried = (
      await createSubscription(t, token, {
        name: 'retried-target',
        event_patterns: ['page.*'],
        webhook_config: {
          url: `${receiver.url}/retried`,
          retry_policy: { max_attempts: 3, retry_delay_seconds: 1, exponential_backoff: false },
        },
      })
    ).id;
    // The first attempt is refused, the second (a millisecond later at FAST_WEBHOOKS' scale) delivered.
    receiver.respond = (req) => ({
      status: req.path === '/retried' && receiver.at('/retried').length === 1 ? 503 : 200,
    });
    await emit(t, token, { event_type: 'page.retried', source: 'test', data: {} });
    const listed = async () =>
      (await t.request('GET', `/api/v1/events/subscriptions/${retried}/deliveries`, { token })).data.data
        .deliveries as { delivery_id: string; status: string; attempts: number }[];
    await page.goto(`${base}/console/subscriptions/${retried}`);
    await page.getByRole('heading', { level: 1, name: 'Subscription' }).waitFor();
    await until(async () => (await listed())[0]?.status === 'delivered', 'the retried delivery delivered');
    const [delivery] = await listed();
    expect(delivery!.attempts).toBe(2);

    await page.getByRole('button', { name: 'Refresh deliveries' }).click();
    const row = page.locator(`tr[data-delivery="${delivery!.delivery_id}"]`);
    // The row shows the last attempt only.
    await row.getByText('HTTP 200').waitFor();
    const toggle = row.getByRole('button', { name: /^Show attempts of page\.retried/ });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    await toggle.focus();
    await page.keyboard.press('Enter');
    const attempts = page.getByRole('table', { name: `Attempts of page.retried (${delivery!.delivery_id})` });
    await attempts.locator('tr[data-attempt="2"]').waitFor();
    const hide = row.getByRole('button', { name: /^Hide attempts of page\.retried/ });
    expect(await hide.getAttribute('aria-expanded')).toBe('true');
    // The button names the row it opened, which holds both attempts in order.
    const panel = await hide.getAttribute('aria-controls');
    expect(await page.locator(`[id="${panel}"]`).getByRole('table').count()).toBe(1);
    const first = attempts.locator('tr[data-attempt="1"]');
    const second = attempts.locator('tr[data-attempt="2"]');
    expect(await first.locator('td').first().textContent()).toBe('1');
    await first.getByText('HTTP 503').first().waitFor();
    await first.getByText('failed', { exact: true }).waitFor();
    await second.getByText('HTTP 200').waitFor();
    await second.getByText('delivered', { exact: true }).waitFor();
    expect(await attempts.locator('tbody tr').count()).toBe(2);

    expect((await axeCheck(page)).violations, 'light, 1280 px').toEqual([]);
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.setViewportSize({ width: 640, height: 900 });
    expect((await axeCheck(page)).violations, 'dark, 640 px').toEqual([]);
    await page.emulateMedia({ colorScheme: 'light' });
    await page.setViewportSize({ width: 1280, height: 900 });
    await hide.focus();

    // Space on the same button closes it again.
    await page.keyboard.press(' ');
    await attempts.waitFor({ state: 'detached' });
    expect(await row.getByRole('button', { name: /^Show attempts/ }).getAttribute('aria-expanded')).toBe(
      'false',
    );
    expect(browser.problems).toEqual([]);
  });
});
