import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const version = (v: string) =>
  `export default { setup(ctx) { ctx.routes.get('/version', () => ({ version: '${v}' })); } };`;

// An update marks the plugin `updating` and unloads it before installing the new version. When the process dies
// then, its task fails as interrupted but the row stays `updating`: the next update must not be refused forever.
describe('a plugin whose update was interrupted by the death of its process', () => {
  let t: TestPlatform;
  let token: string;
  const manifest = (v: string) => ({ name: 'resumer', version: v, permissions: ['http:routes'] });

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(repo, manifest('1.0.0'), version('1.0.0'));
    writePlugin(repo, manifest('1.1.0'), version('1.1.0'));
    t = await startPlatform({ plugins: { repositories: [repo] } });
    token = await t.adminToken();
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'resumer', version: '1.0.0', config: {} },
    });
    expect(res.statusCode, res.body).toBe(201);
  });
  afterAll(async () => t?.close());

  it('is updated by the next request (not 409 "already running"), and runs again', async () => {
    // What the dead update left: the row `updating`, and no update task running.
    await t.platform.context.database.db
      .updateTable('plugins' as never)
      .set({ status: 'updating' } as never)
      .where('id' as never, '=', 'resumer' as never)
      .execute();

    const res = await t.request('POST', '/api/v1/admin/plugins/resumer/update', {
      token,
      body: { version: '1.1.0', backup_current: true, restart_after_update: true },
    });
    expect(res.statusCode, res.body).toBe(202);
    let task: any;
    await eventually(async () => {
      task = (await t.request('GET', `/api/v1/tasks/${res.data.data.task.id}`, { token })).data.data;
      return task?.status !== 'running';
    }, 15_000);
    expect(task.status, JSON.stringify(task)).toBe('completed');
    const plugin = (await t.request('GET', '/api/v1/admin/plugins/resumer', { token })).data.data.plugin;
    expect(plugin).toMatchObject({ manifest: { version: '1.1.0' }, status: 'active', enabled: true });
    const served = await t.request('GET', '/api/v1/ext/resumer/version', { token });
    expect(served.statusCode).toBe(200);
    expect(served.data.data).toMatchObject({ version: '1.1.0' });
  });

  it('still refuses a second update while one is really running', async () => {
    const first = await t.request('POST', '/api/v1/admin/plugins/resumer/update', {
      token,
      body: { version: '1.0.0', backup_current: true, restart_after_update: true },
    });
    expect(first.statusCode, first.body).toBe(202);
    await t.platform.context.database.db
      .updateTable('plugins' as never)
      .set({ status: 'updating' } as never)
      .where('id' as never, '=', 'resumer' as never)
      .execute();
    const second = await t.request('POST', '/api/v1/admin/plugins/resumer/update', {
      token,
      body: { version: '1.1.0', backup_current: true, restart_after_update: true },
    });
    const running =
      (await t.request('GET', `/api/v1/tasks/${first.data.data.task.id}`, { token })).data.data.status ===
      'running';
    // Only meaningful while the first one still runs; once it ended, the second may go ahead.
    if (running) expect(second.statusCode).toBe(409);
    await eventually(
      async () =>
        (await t.request('GET', `/api/v1/tasks/${first.data.data.task.id}`, { token })).data.data.status !==
        'running',
      15_000,
    );
  });
});
