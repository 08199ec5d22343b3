import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from '../webhooks/webhook-fixtures.js';
import { axeCheck } from './axe-check.js';
import { type Browser, openConsoleAsAdmin } from './browser.js';
import { builtConsole } from './built-console.js';

/**
 * The console's operator views (issue 24) in Chromium against a real platform: the overview's headline panels,
 * the service details, a subscription's deliveries and their chart, replay and purge followed to their end,
 * audit details as fields, the configuration's descriptions, and each of these at 390 px without sideways
 * scrolling. The platform's mail is pointed at a closed port, so one component is really not healthy.
 */
describe("the console's operator views", { timeout: 40_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let browser: Browser;
  let page: Page;
  let token: string;
  let receiver: Receiver;
  let failingId: string;

  const loaded = () => page.locator('main [aria-busy="true"]').first().waitFor({ state: 'detached' });
  const go = async (path: string, heading: string) => {
    await page.goto(`${base}/console${path}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await loaded();
  };
  const text = async (testId: string) =>
    ((await page.getByTestId(testId).first().textContent()) ?? '').trim();
  const noAxeViolation = async (where: string) => {
    const { violations, passed } = await axeCheck(page);
    expect(violations, where).toEqual([]);
    expect(passed, where).toBeGreaterThan(10);
  };
  const count = (s: string) => Number(s.replace(/[^\d].*$/, '').replace(/,/g, ''));

  beforeAll(async () => {
    const dist = await builtConsole();
    t = await startPlatform(
      { ...FAST_WEBHOOKS, console: { dist_dir: dist } },
      { env: { PLATFORM__MAIL__SMTP_URL: 'smtp://127.0.0.1:1' } },
    );
    base = await t.platform.listen();
    token = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = (req) => ({ status: req.path === '/refuse' ? 500 : 200 });
    const failing = await createSubscription(t, token, {
      name: 'always-refused',
      event_patterns: ['ops.*'],
      webhook_config: {
        url: `${receiver.url}/refuse`,
        retry_policy: { max_attempts: 1, retry_delay_seconds: 1, exponential_backoff: false },
      },
    });
    failingId = failing.id;
    await createSubscription(t, token, {
      name: 'taken',
      event_patterns: ['ops.*'],
      webhook_config: { url: `${receiver.url}/take` },
    });
    for (let i = 0; i < 3; i++) await emit(t, token, { event_type: 'ops.tick', source: 'test', data: { i } });
    await until(
      () => receiver.at('/refuse').length === 3 && receiver.at('/take').length === 3,
      'every delivery tried',
    );
    // Client errors: requests for things that do not exist.
    for (let i = 0; i < 3; i++) {
      expect((await t.request('GET', '/api/v1/events/evt_missing', { token })).statusCode).toBe(404);
    }
    browser = await openConsoleAsAdmin(base);
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await receiver?.close();
  });

  it('the overview leads with health and why, 5xx apart from 4xx, failing deliveries, streams and the last backup', async () => {
    // An SSE client is a stream connection the overview counts.
    const stream = new AbortController();
    const sse = await fetch(`${base}/api/v1/events/stream`, {
      headers: { accept: 'text/event-stream', authorization: `Bearer ${token}` },
      signal: stream.signal,
    });
    expect(sse.status).toBe(200);
    try {
      // GET /status answers from a copy up to a second old: the page opens once it counts the new stream.
      await until(async () => {
        const status = await t.request('GET', '/api/v1/status', { token });
        return status.data.data.components.stream_hub?.active_connections >= 1;
      }, 'the stream counted in /status');
      await go('/', 'Overview');
      // Mail cannot reach its server: the overview names the component, the failing check and its error.
      const problems = page.getByRole('list', { name: 'Components that are not healthy' });
      await problems.waitFor();
      const why = (await problems.textContent()) ?? '';
      expect(why).toContain('mail');
      expect(why).toContain('smtp connectivity');
      expect(why).toMatch(/ECONNREFUSED|connect/i);
      await noAxeViolation('overview with a component not healthy');
      const overall = await t.request('GET', '/api/v1/components/health', { token });
      expect(await text('overall-health')).toBe(overall.data.data.overall_status);

      // Client errors (the 404s above) are not server errors.
      expect(count(await text('client-errors'))).toBeGreaterThanOrEqual(3);
      expect(count(await text('server-errors'))).toBe(0);
      const summary = await t.request('GET', '/api/v1/metrics/summary', { token });
      const server = Object.entries(summary.data.data.errors.by_status as Record<string, number>)
        .filter(([code]) => Number(code) >= 500)
        .reduce((n, [, c]) => n + c, 0);
      expect(server).toBe(0);

      // The refused subscription is listed as failing, with its error; the one that takes deliveries is not.
      const failing = page.getByRole('list', { name: 'Failing subscriptions' });
      expect(await failing.getByRole('link').allTextContents()).toEqual(['always-refused']);
      expect(await failing.textContent()).toContain('HTTP 500');
      expect(await text('delivery-backlog')).toMatch(/^\d+$/);

      expect(count(await text('stream-connections'))).toBeGreaterThanOrEqual(1);

      // No backup yet, then one.
      expect(await text('last-backup')).toContain('No backup yet');
      const made = await t.request('POST', '/api/v1/backup', { token, body: { include: ['configuration'] } });
      expect(made.statusCode, made.body).toBeLessThan(300);
      await until(async () => {
        const list = await t.request('GET', '/api/v1/backup', { token });
        return list.data.data.backups.some((b: { status: string }) => b.status === 'completed');
      }, 'the backup completed');
      await go('/', 'Overview');
      expect(await text('last-backup')).toMatch(/ago$/);

      // The service counters are one keyboard step away, on their own page.
      const details = page.getByRole('link', { name: 'Service details' });
      await details.focus();
      await page.keyboard.press('Enter');
      await page.getByRole('heading', { level: 1, name: 'Service details' }).waitFor();
      await loaded();
      const hub = page.getByRole('article', { name: 'Component stream_hub' });
      expect(await hub.textContent()).toContain('active connections');
      expect(
        await page.getByRole('table', { name: 'Health checks' }).locator('th[scope="row"]').count(),
      ).toBeGreaterThan(5);
    } finally {
      stream.abort();
    }
    // The charts' legends are words, with 4xx and 5xx apart. The metrics are sampled every 10 s: the page is
    // opened once the first sample is there, or the young installation has nothing to chart yet.
    await until(
      async () => {
        const since = encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString());
        const res = await t.request('GET', `/api/v1/metrics?start_time=${since}&resolution=1m`, { token });
        return (res.data.data.metrics.request_count ?? []).length > 0;
      },
      'the first metrics sample',
      30_000,
    );
    await go('/', 'Overview');
    const errorsLegend = page.getByRole('group', { name: /^Responses and errors per interval/ });
    await errorsLegend.waitFor();
    const labels = await errorsLegend.getByRole('button').allTextContents();
    expect(labels).toEqual(
      expect.arrayContaining(['Client errors (4xx)', 'Server errors (5xx)', 'All responses']),
    );
    const latency = await page
      .getByRole('group', { name: /^Latency/ })
      .getByRole('button')
      .allTextContents();
    expect(latency).toContain('95th percentile (p95)');
    // A young installation: the charts start at its first sample, not an hour before it.
    expect(await text('samples-since')).toContain('Samples since');
    expect(browser.problems).toEqual([]);
  });

  it("a subscription's page charts its delivered and failed attempts and shows each delivery's answer", async () => {
    await go(`/subscriptions/${failingId}`, 'Subscription');
    const timeline = await t.request('GET', `/api/v1/events/subscriptions/${failingId}/delivery-timeline`, {
      token,
    });
    expect(timeline.data.data.totals).toEqual({ delivered: 0, failed: 3 });
    expect(await text('attempts-failed')).toBe('3');
    expect(await text('attempts-delivered')).toBe('0');
    const legend = page.getByRole('group', { name: /^Delivery attempts: series shown/ });
    expect(await legend.getByRole('button').allTextContents()).toEqual([
      'Delivered (2xx answer)',
      'Failed (other answer, timeout or no connection)',
    ]);
    expect(await page.locator('.chart canvas').count()).toBe(1);
    await noAxeViolation('subscription with its chart');

    const table = page.getByRole('table', { name: 'Deliveries' });
    const headers = await table.locator('thead th').allTextContents();
    expect(headers.slice(0, 7)).toEqual([
      'Event',
      'Status',
      'Attempts',
      'Response',
      'Duration',
      'Error',
      'Last attempt',
    ]);
    const first = table.locator('tbody tr').first();
    const cells = await first.locator('td').allTextContents();
    expect(cells[1]).toContain('failed');
    expect(cells[3]).toBe('HTTP 500');
    expect(cells[4]).toMatch(/^\d[\d,]* ms$/);
    expect(cells[5]).toContain('500');
    // The webhook settings read as fields, not JSON.
    expect(await page.locator('pre.json').count()).toBe(0);
    expect(await page.locator('dl.fields dt', { hasText: 'timeout seconds' }).count()).toBe(1);
    expect(browser.problems).toEqual([]);
  });

  it('replay and purge start their task from a form and follow it to the end', async () => {
    await go('/replay-purge', 'Replay and purge');
    const replay = page.getByRole('form', { name: 'Replay events' });
    await replay.getByLabel('Event types').fill('ops.*');
    await replay.getByLabel('Subscriptions').fill(failingId);
    await replay.getByRole('button', { name: 'Start replay' }).click();
    await replay
      .locator('xpath=..')
      .getByRole('status')
      .filter({ hasText: /3 events to replay/ })
      .waitFor();
    const replayTask = page.locator('.task').first();
    await replayTask.getByTestId('task-status').filter({ hasText: 'completed' }).waitFor({ timeout: 20_000 });
    await until(() => receiver.at('/refuse').length === 6, 'the replayed deliveries tried');

    const purge = page.getByRole('form', { name: 'Purge events' });
    await purge.getByLabel('Older than (days)').fill('0');
    await purge.getByLabel('Event types').fill('ops.*');
    await purge.getByRole('button', { name: 'Count matching events' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /3 events match/ })
      .waitFor();
    await page.locator('.task').last().getByTestId('task-status').filter({ hasText: 'completed' }).waitFor();
    expect(
      (await t.request('GET', '/api/v1/events?event_type=ops.*', { token })).data.data.pagination.total,
    ).toBe(3);

    // Deleting takes an explicit tick; until then the button does nothing.
    await purge.getByLabel(/Only count/).uncheck();
    const doIt = purge.getByRole('button', { name: 'Purge events' });
    expect(await doIt.isDisabled()).toBe(true);
    await purge.getByLabel(/I understand/).check();
    await doIt.click();
    await page
      .getByRole('status')
      .filter({ hasText: /3 events to delete/ })
      .waitFor();
    await page
      .locator('.task')
      .last()
      .getByTestId('task-status')
      .filter({ hasText: 'completed' })
      .waitFor({ timeout: 20_000 });
    await until(async () => {
      const left = await t.request('GET', '/api/v1/events?event_type=ops.*', { token });
      return left.data.data.pagination.total === 0;
    }, 'the purged events gone');
    await noAxeViolation('replay and purge with their tasks');
    expect(browser.problems).toEqual([]);
  });

  it('audit details read as fields and every configuration key says what it does and when it applies', async () => {
    const changed = await t.request('PUT', '/api/v1/config', {
      token,
      body: { server: { environment: 'operator-test' } },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    await go('/audit', 'Audit log');
    const row = page
      .getByRole('table', { name: 'Audit log' })
      .locator('tbody tr', { hasText: 'config.update' })
      .first();
    await row.waitFor();
    expect(await row.locator('code.preview').count()).toBe(0);
    const fields = await row.locator('dl.fields > div > dt').allTextContents();
    expect(fields.length).toBeGreaterThan(0);
    expect(await row.locator('dl.fields').textContent()).toContain('server.environment');

    await go('/config', 'Configuration');
    await page
      .getByRole('navigation', { name: 'Configuration sections' })
      .getByRole('button', { name: 'server', exact: true })
      .click();
    const form = page.getByRole('form', { name: 'Section server' });
    const hintOf = async (label: string) => {
      const input = form.getByLabel(label, { exact: true });
      const id = await input.getAttribute('aria-describedby');
      return (await page.locator(`[id="${id}"]`).textContent()) ?? '';
    };
    await until(async () => (await hintOf('port')).length > 0, 'the key descriptions loaded');
    expect(await hintOf('port')).toMatch(/^Applies after a restart\. Port of the HTTP interface/);
    expect(await hintOf('environment')).toMatch(/^Applies at once\. A label for this deployment/);
    expect(browser.problems).toEqual([]);
  });

  it('the new views fit 390 px without sideways scrolling', async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const [path, heading] of [
        ['/', 'Overview'],
        ['/overview/details', 'Service details'],
        [`/subscriptions/${failingId}`, 'Subscription'],
        ['/replay-purge', 'Replay and purge'],
        ['/audit', 'Audit log'],
        ['/config', 'Configuration'],
      ] as const) {
        await go(path, heading);
        const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
        const out = (await page.evaluate(`[...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-wrap'))
          .slice(0, 5).map((e) => e.tagName.toLowerCase() + '.' + e.className).join(', ')`)) as string;
        expect(width, `${heading} is ${width} px wide: ${out}`).toBeLessThanOrEqual(390);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 900 });
    }
  });
});
