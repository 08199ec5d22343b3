import { rmSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { type Browser, openConsoleAsAdmin } from './browser.js';
import { builtConsole } from './built-console.js';

/**
 * A JSON body keeps its types: the platform refuses `"max": "5"` where it wants 5. The console's forms must send
 * numbers, booleans and arrays as such, also after the operator cleared a field and typed it again, and for
 * a plugin's configuration whose schema holds numbers in a list, a numeric choice or a list of objects.
 */
describe('the console sends the JSON types the platform expects', { timeout: 30_000 }, () => {
  let t: TestPlatform;
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
  const configSection = async (name: string) => {
    await open('Configuration', 'Configuration');
    await page
      .getByRole('navigation', { name: 'Configuration sections' })
      .getByRole('button', { name, exact: true })
      .click();
    return page.getByRole('form', { name: `Section ${name}` });
  };
  /** Whether a form control passes the browser's own checks (an invalid one stops the form's submission). */
  const valid = (e: unknown) => (e as { validity: { valid: boolean } }).validity.valid;
  const storedConfig = async () =>
    (await t.request('GET', '/api/v1/admin/config', { token })).data.data.config as Record<
      string,
      Record<string, unknown>
    >;

  beforeAll(async () => {
    const dist = await builtConsole();
    repository = tempRepository();
    writePlugin(
      repository,
      {
        name: 'typed-demo',
        config_schema: {
          type: 'object',
          properties: {
            ports: { type: 'array', items: { type: 'integer' }, default: [80] },
            level: { type: 'integer', enum: [1, 2, 3], default: 1 },
            jobs: {
              type: 'array',
              items: {
                type: 'object',
                properties: { name: { type: 'string' }, priority: { type: 'integer' } },
                required: ['name'],
                additionalProperties: false,
              },
              default: [{ name: 'first', priority: 5 }],
            },
          },
          additionalProperties: false,
        },
      },
      'export default { setup() {} };',
    );
    t = await startPlatform({
      console: { dist_dir: dist },
      plugins: { repositories: [repository] },
      // A fractional value in a section, as tests and development set it.
      webhooks: { retry_delay_scale: 0.5 },
    });
    const base = await t.platform.listen();
    token = await t.adminToken();
    browser = await openConsoleAsAdmin(base);
    page = browser.page;
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    if (repository) rmSync(repository, { recursive: true, force: true });
  });

  it('a number setting cleared and typed again is saved as a number', async () => {
    const form = await configSection('events');
    const days = form.getByLabel('retention_days');
    await days.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    await page.keyboard.type('45');
    expect(await days.getAttribute('type')).toBe('number');
    await form.getByRole('button', { name: 'Save events' }).click();
    await form.getByRole('status').filter({ hasText: 'Saved events.retention_days' }).waitFor();
    expect((await storedConfig())['events']?.['retention_days']).toBe(45);
  });

  it('a number setting left empty is not sent as text', async () => {
    const form = await configSection('events');
    const buffer = form.getByLabel('stream_buffer_size');
    await buffer.click();
    await page.keyboard.press('Control+A');
    await page.keyboard.press('Backspace');
    expect(await buffer.evaluate(valid)).toBe(false);
    await form.getByRole('button', { name: 'Save events' }).click();
    await form.getByRole('button', { name: 'Discard changes' }).click();
    expect(await buffer.inputValue()).toBe('1000');
    expect((await storedConfig())['events']?.['stream_buffer_size']).toBe(1000);
  });

  it('a section holding a fractional number can be saved, fractions included', async () => {
    const form = await configSection('webhooks');
    const scale = form.getByLabel('retry_delay_scale');
    expect(await scale.inputValue()).toBe('0.5');
    await scale.fill('0.25');
    await form.getByRole('button', { name: 'Save webhooks' }).click();
    await form.getByRole('status').filter({ hasText: 'Saved webhooks.retry_delay_scale' }).waitFor();
    expect((await storedConfig())['webhooks']?.['retry_delay_scale']).toBe(0.25);
  });

  it("a plugin's numbers in a list, numeric choice and list of objects are saved with their types", async () => {
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'typed-demo', version: 'latest', config: { enabled: true } },
    });
    expect(installed.statusCode).toBeLessThan(300);
    await open('Plugins', 'Plugins');
    await page.getByRole('link', { name: 'typed-demo', exact: true }).click();
    const form = page.getByRole('form', { name: 'Plugin configuration' });

    const ports = form.getByLabel('ports');
    await ports.click();
    await page.keyboard.press('Control+End');
    await page.keyboard.press('Enter');
    await page.keyboard.type('443');
    await form.getByLabel('level').selectOption('2');
    // The list of objects shows as JSON (not "[object Object]") and is edited as JSON.
    const jobs = form.getByLabel('jobs');
    expect(JSON.parse(await jobs.inputValue())).toEqual([{ name: 'first', priority: 5 }]);
    await jobs.fill('[{"name": "first", "priority": 5}, {"name": "second", "priority": 7}]');

    await form.getByRole('button', { name: 'Save configuration' }).click();
    await page.getByRole('status').filter({ hasText: 'Configuration saved.' }).waitFor();
    const plugin = await t.request('GET', '/api/v1/admin/plugins/typed-demo', { token });
    expect(plugin.data.data.plugin.configuration).toEqual({
      ports: [80, 443],
      level: 2,
      jobs: [
        { name: 'first', priority: 5 },
        { name: 'second', priority: 7 },
      ],
    });
  });

  it("a plugin's list of objects that is not valid JSON is not saved", async () => {
    const form = page.getByRole('form', { name: 'Plugin configuration' });
    const jobs = form.getByLabel('jobs');
    await jobs.fill('[{"name": "third"');
    expect(await jobs.evaluate(valid)).toBe(false);
    await form.getByRole('button', { name: 'Save configuration' }).click();
    const plugin = await t.request('GET', '/api/v1/admin/plugins/typed-demo', { token });
    expect(plugin.data.data.plugin.configuration.jobs).toHaveLength(2);
  });

  it('runs without a script error or a CSP refusal', () => {
    expect(browser.problems).toEqual([]);
  });
});
