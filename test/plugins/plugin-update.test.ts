import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const version = (v: string, extra = '') =>
  `export default { setup(ctx) { ${extra} ctx.routes.get('/version', () => ({ version: '${v}', greeting: ctx.config.greeting })); } };`;

describe('plugin updates: a plugin_update task with steps, rolled back when the new version fails', () => {
  let t: TestPlatform;
  let token: string;
  const manifest = (v: string) => ({
    name: 'counter',
    version: v,
    permissions: ['http:routes'],
    config_schema: { type: 'object', properties: { greeting: { type: 'string', default: 'hi' } } },
  });

  const waitTask = async (id: string) => {
    let task: any;
    await eventually(async () => {
      task = (await t.request('GET', `/api/v1/tasks/${id}`, { token })).data.data;
      return task?.status !== 'running';
    }, 15_000);
    return task;
  };

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(repo, manifest('1.0.0'), version('1.0.0'));
    writePlugin(repo, manifest('1.1.0'), version('1.1.0'));
    writePlugin(repo, manifest('2.0.0'), version('2.0.0', "throw new Error('2.0.0 cannot start');"));
    t = await startPlatform({ plugins: { repositories: [repo] } });
    token = await t.adminToken();
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'counter', version: '1.0.0', config: { greeting: 'hello' } },
    });
    expect(res.statusCode, res.body).toBe(201);
  });
  afterAll(async () => t?.close());

  it('updates to a new version through the steps, keeping the configuration, without a restart', async () => {
    const res = await t.request('POST', '/api/v1/admin/plugins/counter/update', {
      token,
      body: { version: '1.1.0', backup_current: true, restart_after_update: true },
    });
    expect(res.statusCode).toBe(202);
    expect(res.data.data.task).toMatchObject({
      type: 'plugin_update',
      status: 'running',
      details: { plugin_id: 'counter', current_version: '1.0.0', target_version: '1.1.0' },
    });
    const task = await waitTask(res.data.data.task.id);
    expect(task.status, JSON.stringify(task)).toBe('completed');
    expect(task.details.steps.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
      ['download', 'completed'],
      ['verify', 'completed'],
      ['backup', 'completed'],
      ['stop', 'completed'],
      ['install', 'completed'],
      ['start', 'completed'],
      ['health_check', 'completed'],
    ]);
    expect(task.result).toMatchObject({ previous_version: '1.0.0', version: '1.1.0', status: 'active' });
    const served = await t.request('GET', '/api/v1/ext/counter/version', { token });
    expect(served.data.data).toEqual({ version: '1.1.0', greeting: 'hello' });
    const detail = (await t.request('GET', '/api/v1/admin/plugins/counter', { token })).data.data.plugin;
    expect(detail).toMatchObject({
      status: 'active',
      previous_version: '1.0.0',
      manifest: { version: '1.1.0' },
    });
  });

  it('rolls back to the kept previous version when the new one fails to start', async () => {
    const res = await t.request('POST', '/api/v1/admin/plugins/counter/update', {
      token,
      body: { version: '2.0.0' },
    });
    const task = await waitTask(res.data.data.task.id);
    expect(task.status).toBe('failed');
    expect(task.error).toMatch(/2\.0\.0 cannot start.*rolled back to 1\.1\.0/);
    expect(task.details).toMatchObject({ rolled_back: true, rolled_back_to: '1.1.0' });
    const steps = Object.fromEntries(
      task.details.steps.map((s: { name: string; status: string }) => [s.name, s.status]),
    );
    expect(steps).toMatchObject({ download: 'completed', verify: 'completed', install: 'completed' });
    expect(steps.health_check).not.toBe('completed');
    // The task ended: the step that failed says so, none is left running.
    expect(steps.start).toBe('failed');
    expect(Object.values(steps)).not.toContain('running');
    const served = await t.request('GET', '/api/v1/ext/counter/version', { token });
    expect(served.data.data.version).toBe('1.1.0');
    const detail = (await t.request('GET', '/api/v1/admin/plugins/counter', { token })).data.data.plugin;
    expect(detail).toMatchObject({ status: 'active', enabled: true, manifest: { version: '1.1.0' } });
  });

  it('fails the task without touching the plugin when the version does not exist', async () => {
    const res = await t.request('POST', '/api/v1/admin/plugins/counter/update', {
      token,
      body: { version: '7.0.0' },
    });
    const task = await waitTask(res.data.data.task.id);
    expect(task.status).toBe('failed');
    expect(task.details.steps.map((s: { name: string; status: string }) => [s.name, s.status])).toEqual([
      ['download', 'failed'],
      ['verify', 'pending'],
      ['backup', 'pending'],
      ['stop', 'pending'],
      ['install', 'pending'],
      ['start', 'pending'],
      ['health_check', 'pending'],
    ]);
    expect((await t.request('GET', '/api/v1/ext/counter/version', { token })).data.data.version).toBe(
      '1.1.0',
    );
  });

  it('announces plugin.updated and audits the request; the resource API starts the same task', async () => {
    expect(
      await eventually(async () => {
        const res = await t.request('GET', '/api/v1/events?event_type=plugin.updated', { token });
        return res.data.data.events.length === 1;
      }),
    ).toBe(true);
    const audit = await t.request('GET', '/api/v1/admin/audit-log?action=plugin.update', { token });
    expect(audit.data.data.audit_entries.length).toBeGreaterThanOrEqual(3);
    const patched = await t.request('PATCH', '/api/v1/plugins/counter', {
      token,
      body: { version: '1.0.0' },
    });
    expect(patched.statusCode).toBe(202);
    const task = await waitTask(patched.data.data.task.id);
    expect(task.status).toBe('completed');
    expect((await t.request('GET', '/api/v1/ext/counter/version', { token })).data.data.version).toBe(
      '1.0.0',
    );
  });

  it('answers 404 for an update of a plugin that is not installed', async () => {
    const res = await t.request('POST', '/api/v1/admin/plugins/nobody/update', {
      token,
      body: { version: '1.0.0' },
    });
    expect(res.statusCode).toBe(404);
  });
});
