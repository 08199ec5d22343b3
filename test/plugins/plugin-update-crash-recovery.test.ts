import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertDeadInstanceTask } from '../helpers/dead-instance-task.js';
import { eventually } from '../helpers/eventually.js';
import { provisionStorage, startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const code = (v: string) =>
  `export default { setup(ctx) { ctx.routes.get('/version', () => ({ version: '${v}', greeting: ctx.config.greeting, token_ok: ctx.config.token === 's3cret' })); } };`;

const manifest = (name: string, v: string) => ({
  name,
  version: v,
  permissions: ['http:routes'],
  config_schema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      greeting: { type: 'string', default: 'hi' },
      token: { type: 'string', secret: true },
      // Only the new version knows this key: the old one must get its own configuration back.
      ...(v === '1.0.0' ? {} : { extra: { type: 'string', default: 'new' } }),
    },
  },
});

function repository(...names: string[]): string {
  const repo = tempRepository();
  for (const name of names) {
    writePlugin(repo, manifest(name, '1.0.0'), code('1.0.0'));
    writePlugin(repo, manifest(name, '1.1.0'), code('1.1.0'));
  }
  return repo;
}

/**
 * What the death of an instance in the middle of an update of `plugin` leaves (the way test/helpers'
 * dead-instance task does it for tasks): the plugin row `updating` at the new version, and its `plugin_update`
 * task running, claimed by `dead-instance` whose lease runs out 300 ms from now. The task's details are those a
 * real update of the plugin recorded (`details`), with its steps as they stood after `install`.
 */
async function leaveDeadUpdate(
  t: TestPlatform,
  plugin: string,
  taskId: string,
  details: Record<string, unknown>,
) {
  const db = t.platform.context.database.db;
  await db
    .updateTable('plugins' as never)
    .set({ status: 'updating' } as never)
    .where('id' as never, '=', plugin as never)
    .execute();
  const steps = (details['steps'] as { name: string }[]).map((s) => ({
    name: s.name,
    status: ['start', 'health_check'].includes(s.name)
      ? s.name === 'start'
        ? 'running'
        : 'pending'
      : 'completed',
    progress: 0,
  }));
  await insertDeadInstanceTask(t, {
    id: taskId,
    type: 'plugin_update',
    progress: 0.6,
    details: JSON.stringify({ ...details, steps }),
  });
}

async function install(t: TestPlatform, token: string, name: string, enabled: boolean) {
  const res = await t.request('POST', '/api/v1/admin/plugins/install', {
    token,
    body: { plugin_name: name, version: '1.0.0', enabled, config: { greeting: 'hello', token: 's3cret' } },
  });
  expect(res.statusCode, res.body).toBe(201);
}

/** Updates to 1.1.0 for real (keeping 1.0.0) and answers the details the finished task recorded. */
async function update(t: TestPlatform, token: string, name: string): Promise<Record<string, unknown>> {
  const res = await t.request('POST', `/api/v1/admin/plugins/${name}/update`, {
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
  return task.details;
}

describe('a plugin left `updating` by an update whose instance died', { timeout: 60_000 }, () => {
  describe('recovered when the task lease of the dead instance expires', () => {
    let t: TestPlatform;
    let token: string;

    beforeAll(async () => {
      t = await startPlatform({
        plugins: { repositories: [repository('phoenix')] },
        tasks: { lease_seconds: 1 },
      });
      token = await t.adminToken();
      await install(t, token, 'phoenix', true);
    });
    afterAll(async () => t?.close());

    it('is put back to its previous version, configuration and running state, saying the update was interrupted', async () => {
      const details = await update(t, token, 'phoenix');
      await leaveDeadUpdate(t, 'phoenix', 'task_deadupdate00000000000000', details);
      const stuck = (await t.request('GET', '/api/v1/plugins/phoenix', { token })).data.data.plugin;
      expect(stuck).toMatchObject({ status: 'updating', manifest: { version: '1.1.0' } });

      const task = async () =>
        (await t.request('GET', '/api/v1/tasks/task_deadupdate00000000000000', { token })).data.data;
      expect(await eventually(async () => (await task()).status === 'failed', 10_000)).toBe(true);
      expect(await task()).toMatchObject({ error: 'interrupted' });

      let plugin: any;
      await eventually(async () => {
        plugin = (await t.request('GET', '/api/v1/plugins/phoenix', { token })).data.data.plugin;
        return plugin.status !== 'updating';
      });
      expect(plugin).toMatchObject({
        manifest: { version: '1.0.0' },
        status: 'active',
        enabled: true,
        configuration: { greeting: 'hello', token: '********' },
      });
      expect(plugin.configuration).not.toHaveProperty('extra');
      // The row is put back first, then the plugin is loaded again.
      const serve = () => t.request('GET', '/api/v1/ext/phoenix/version', { token });
      await eventually(async () => (await serve()).statusCode === 200);
      const served = await serve();
      expect(served.statusCode, served.body).toBe(200);
      expect(served.data.data).toMatchObject({ version: '1.0.0', greeting: 'hello', token_ok: true });

      // Said in the plugin's logs and as a platform event (raised by the platform: no request behind it).
      await eventually(async () => {
        plugin = (await t.request('GET', '/api/v1/plugins/phoenix', { token })).data.data.plugin;
        return plugin.logs.some((l: { message: string }) => /interrupted/.test(l.message));
      });
      const line = plugin.logs.find((l: { message: string }) => /interrupted/.test(l.message));
      expect(line.message).toContain('task_deadupdate00000000000000');
      let event: any;
      await eventually(async () => {
        const res = await t.request('GET', '/api/v1/events?event_type=plugin.error&per_page=100', { token });
        event = res.data.data.events.find(
          (e: any) => e.data_preview?.reason === 'update_interrupted' && e.source === 'plugin:phoenix',
        );
        return event !== undefined;
      });
      expect(event.data_preview).toMatchObject({
        plugin_id: 'phoenix',
        version: '1.1.0',
        rolled_back_to: '1.0.0',
        task_id: 'task_deadupdate00000000000000',
      });
      expect(event.metadata).toMatchObject({ request_id: '', ip_address: '' });

      // Settled: the next update runs as usual.
      await update(t, token, 'phoenix');
      const after = (await t.request('GET', '/api/v1/plugins/phoenix', { token })).data.data.plugin;
      expect(after).toMatchObject({ manifest: { version: '1.1.0' }, status: 'active', enabled: true });
    });
  });

  describe('recovered when the platform next starts', () => {
    let storage: Awaited<ReturnType<typeof provisionStorage>>;
    let b: TestPlatform | undefined;

    beforeAll(async () => {
      storage = await provisionStorage();
    });
    afterAll(async () => {
      await b?.platform.close();
      await storage?.cleanup();
    });

    it('puts a disabled plugin back to its previous version, still disabled', async () => {
      const start = () =>
        startPlatform({ plugins: { repositories: [repository('sleeper')] } }, { storage: storage.tree });
      const a = await start();
      const tokenA = await a.adminToken();
      await install(a, tokenA, 'sleeper', false);
      const before = (await a.request('GET', '/api/v1/plugins/sleeper', { token: tokenA })).data.data.plugin;
      const details = await update(a, tokenA, 'sleeper');
      await leaveDeadUpdate(a, 'sleeper', 'task_deadupdate11111111111111', details);
      await a.platform.close();
      await new Promise((r) => setTimeout(r, 400));

      b = await start();
      const token = await b.adminToken();
      // Put back during start-up: the first read already sees it.
      const plugin = (await b.request('GET', '/api/v1/plugins/sleeper', { token })).data.data.plugin;
      expect(plugin).toMatchObject({
        manifest: { version: '1.0.0' },
        status: before.status,
        enabled: false,
        configuration: { greeting: 'hello', token: '********' },
      });
      const task = (await b.request('GET', '/api/v1/tasks/task_deadupdate11111111111111', { token })).data
        .data;
      expect(task).toMatchObject({ status: 'failed', error: 'interrupted' });
      expect((await b.request('GET', '/api/v1/ext/sleeper/version', { token })).statusCode).toBe(404);
    });
  });
});
