import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

describe("a plugin's figures", () => {
  let t: TestPlatform;
  let token: string;

  const detail = async (id: string) =>
    (await t.request('GET', `/api/v1/admin/plugins/${id}`, { token })).data.data.plugin;

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      { name: 'ticker', version: '1.2.0', isolation: 'worker', permissions: ['events:subscribe'] },
      `export default { async setup(ctx) {
        await ctx.events.subscribe('tick.*', (event) => { if (event.data.spin) for (;;) {} });
      } };`,
    );
    t = await startPlatform({
      plugins: { repositories: [repo], max_failures: 5, call_timeout_ms: 1500 },
      webhooks: { retry_delay_scale: 0.001, poll_interval_ms: 50 },
    });
    token = await t.adminToken();
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'ticker' },
    });
    expect(installed.statusCode, installed.body).toBe(201);
  }, 60_000);
  afterAll(async () => t?.close());

  it('shows the installed version at the top of the detail, as the list items do', async () => {
    const list = await t.request('GET', '/api/v1/admin/plugins', { token });
    const item = list.data.data.plugins.find((p: { id: string }) => p.id === 'ticker');
    expect(item.version).toBe('1.2.0');
    expect((await detail('ticker')).version).toBe('1.2.0');
  });

  it('counts a delivery that timed out, and the worker terminated for it, as one failure', async () => {
    const emit = (data: Record<string, unknown>) =>
      t.request('POST', '/api/v1/events', { token, body: { event_type: 'tick.tock', data } });
    for (let i = 0; i < 3; i++) await emit({ i });
    expect(await eventually(async () => (await detail('ticker')).metrics.events_handled === 3, 10_000)).toBe(
      true,
    );
    await emit({ spin: true });
    expect(await eventually(async () => (await detail('ticker')).status === 'error', 15_000)).toBe(true);
    const d = await detail('ticker');
    expect(d.error).toMatch(/did not answer within 1500 ms/);
    expect(d.metrics).toMatchObject({ events_handled: 4, errors: 1 });
  });
});
