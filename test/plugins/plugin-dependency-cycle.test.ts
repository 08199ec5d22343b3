import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const code = `export default { setup(ctx) { ctx.routes.get('/v', () => ({ ok: true })); } };`;

describe('an update that would make a dependency cycle', () => {
  let t: TestPlatform;
  let token: string;

  const waitTask = async (id: string) => {
    let task: any;
    await eventually(async () => {
      task = (await t.request('GET', `/api/v1/tasks/${id}`, { token })).data.data;
      return task?.status !== 'running' && task?.status !== 'pending';
    }, 15_000);
    return task;
  };
  const install = async (name: string) => {
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: name, version: '1.0.0' },
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  const update = async (name: string, version: string) => {
    const res = await t.request('POST', `/api/v1/admin/plugins/${name}/update`, { token, body: { version } });
    expect(res.statusCode, res.body).toBe(202);
    return waitTask(res.data.data.task.id);
  };
  const detail = async (name: string) =>
    (await t.request('GET', `/api/v1/admin/plugins/${name}`, { token })).data.data.plugin;

  beforeAll(async () => {
    const repo = tempRepository();
    const plugin = (name: string, version: string, dependencies: Record<string, string> = {}) =>
      writePlugin(repo, { name, version, permissions: ['http:routes'], dependencies }, code);
    plugin('cyc-b', '1.0.0');
    plugin('cyc-b', '1.1.0', { 'cyc-a': '^1.0.0' });
    plugin('cyc-a', '1.0.0', { 'cyc-b': '^1.0.0' });
    t = await startPlatform({ plugins: { repositories: [repo] } });
    token = await t.adminToken();
    await install('cyc-b');
    await install('cyc-a');
  }, 60_000);
  afterAll(async () => t?.close());

  it('fails at verify with PLUGIN_DEPENDENCY_ERROR naming the cycle, and leaves the plugin as it was', async () => {
    const task = await update('cyc-b', '1.1.0');
    expect(task.status).toBe('failed');
    const steps = Object.fromEntries(
      task.details.steps.map((s: { name: string; status: string }) => [s.name, s.status]),
    );
    expect(steps).toMatchObject({ download: 'completed', verify: 'failed', stop: 'pending' });
    expect(task.error).toContain('cyc-b → cyc-a → cyc-b');
    expect(task.details).toMatchObject({
      error_code: 'PLUGIN_DEPENDENCY_ERROR',
      error_details: { reason: 'dependency_cycle', cycle: ['cyc-b', 'cyc-a', 'cyc-b'] },
    });
    const b = await detail('cyc-b');
    expect(b).toMatchObject({
      version: '1.0.0',
      status: 'active',
      enabled: true,
      manifest: { dependencies: {} },
    });
    // The load order still puts a plugin after the one it depends on.
    expect((await detail('cyc-a')).load_order).toBeGreaterThan(b.load_order);
  });

  it('keeps both plugins manageable: the dependent disables, then its dependency', async () => {
    const a = await t.request('POST', '/api/v1/admin/plugins/cyc-a/disable', { token });
    expect(a.statusCode, a.body).toBe(200);
    const b = await t.request('POST', '/api/v1/admin/plugins/cyc-b/disable', { token });
    expect(b.statusCode, b.body).toBe(200);
  });
});
