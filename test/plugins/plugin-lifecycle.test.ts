import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

describe('plugin lifecycle without restarts: install, enable, disable, uninstall, dependencies', () => {
  let t: TestPlatform;
  let token: string;
  // Relative to the plugin's data folder, the only place its files may be.
  const forwarded = 'shop/events.jsonl';
  const lines = () => {
    try {
      const data = (t.storage as { storage: { data_dir: string } }).storage.data_dir;
      return readFileSync(join(data, 'plugin-data', 'audit-forwarder', forwarded), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    } catch {
      return [];
    }
  };
  const admin = (method: string, url: string, body?: unknown) => t.request(method, url, { token, body });

  beforeAll(async () => {
    const extra = tempRepository();
    writePlugin(
      extra,
      { name: 'needs-new-platform', platform_version: '>=99.0.0' },
      'export default { setup() {} };',
    );
    writePlugin(
      extra,
      { name: 'needs-ghost', dependencies: { ghost: '^1.0.0' } },
      'export default { setup() {} };',
    );
    writePlugin(
      extra,
      { name: 'needs-new-forwarder', dependencies: { 'audit-forwarder': '^2.0.0' } },
      'export default { setup() {} };',
    );
    // Load order: a dependency whose name sorts last still loads before its dependent; ties go by name.
    writePlugin(
      extra,
      { name: 'order-alpha', dependencies: { 'order-zulu': '^1.0.0' } },
      'export default { setup() {} };',
    );
    writePlugin(extra, { name: 'order-beta' }, 'export default { setup() {} };');
    writePlugin(extra, { name: 'order-zulu' }, 'export default { setup() {} };');
    // The default repository (the bundled plugins/ folder) comes first, as configured by default.
    t = await startPlatform({
      plugins: { repositories: ['./plugins', extra] },
      webhooks: { poll_interval_ms: 50 },
    });
    token = await t.adminToken();
  });
  afterAll(async () => t?.close());

  it('lists what the bundled repository offers', async () => {
    const res = await admin('GET', '/api/v1/admin/plugins/available');
    const names = res.data.data.plugins.map((p: { name: string }) => p.name);
    expect(names).toEqual(expect.arrayContaining(['audit-forwarder', 'notifier', 'scheduler']));
    expect(res.data.data.plugins.find((p: { name: string }) => p.name === 'scheduler')).toMatchObject({
      versions: ['1.0.0'],
      latest: '1.0.0',
      installed_version: null,
    });
  });

  it('refuses an unmet platform_version and missing or incompatible dependencies with 409 PLUGIN_DEPENDENCY_ERROR', async () => {
    const platform = await admin('POST', '/api/v1/admin/plugins/install', {
      plugin_name: 'needs-new-platform',
    });
    expect(platform.statusCode).toBe(409);
    expect(platform.data.error).toMatchObject({
      code: 'PLUGIN_DEPENDENCY_ERROR',
      details: { plugin: 'needs-new-platform', platform_version: { required: '>=99.0.0' } },
    });
    const ghost = await admin('POST', '/api/v1/admin/plugins/install', { plugin_name: 'needs-ghost' });
    expect(ghost.statusCode).toBe(409);
    expect(ghost.data.error.details).toMatchObject({ missing: ['ghost'], dependencies: ['ghost'] });
    const notifier = await admin('POST', '/api/v1/admin/plugins/install', {
      plugin_name: 'notifier',
      config: { url: 'http://127.0.0.1:9/hook' },
    });
    expect(notifier.statusCode).toBe(409);
    expect(notifier.data.error.details.missing).toEqual(['audit-forwarder']);
  });

  it('installs a bundled plugin from the repository and runs it at once', async () => {
    const res = await admin('POST', '/api/v1/admin/plugins/install', {
      source: 'repository',
      plugin_name: 'audit-forwarder',
      version: 'latest',
      config: { enabled: true, path: forwarded, patterns: ['shop.**'] },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin).toMatchObject({
      id: 'audit-forwarder',
      version: '1.0.0',
      status: 'active',
      enabled: true,
      health: 'healthy',
      load_order: 1,
      endpoints: ['GET /api/v1/ext/audit-forwarder/status'],
      permissions: ['events:subscribe', 'http:routes'],
    });
    await admin('POST', '/api/v1/events', { event_type: 'shop.order.created', data: { id: 7 } });
    expect(
      await eventually(async () => lines().some((l) => l.event_type === 'shop.order.created'), 10_000),
    ).toBe(true);
    // The line is in the file before the plugin's append resolves and counts it.
    const counted = await eventually(
      async () => (await admin('GET', '/api/v1/ext/audit-forwarder/status')).data.data.forwarded === 1,
      5000,
    );
    expect(counted).toBe(true);
    const status = await admin('GET', '/api/v1/ext/audit-forwarder/status');
    expect(status.data.data).toMatchObject({ path: forwarded, forwarded: 1 });
  });

  it('refuses an incompatible dependency version with the names in details', async () => {
    const res = await admin('POST', '/api/v1/admin/plugins/install', { plugin_name: 'needs-new-forwarder' });
    expect(res.statusCode).toBe(409);
    expect(res.data.error.details.incompatible).toEqual([
      { name: 'audit-forwarder', required: '^2.0.0', installed: '1.0.0' },
    ]);
  });

  it('installs a plugin that depends on an enabled one, loading it after its dependency', async () => {
    const res = await admin('POST', '/api/v1/admin/plugins/install', {
      plugin_name: 'notifier',
      config: { url: 'http://127.0.0.1:9/hook', secret: 'chat-secret' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const list = await admin('GET', '/api/v1/admin/plugins');
    const order = list.data.data.plugins.map((p: { id: string; load_order: number }) => [p.id, p.load_order]);
    expect(order).toEqual([
      ['audit-forwarder', 1],
      ['notifier', 2],
    ]);
    expect(list.data.data.plugins[1].dependencies).toEqual(['audit-forwarder']);
    expect(list.body).not.toContain('chat-secret');
  });

  it('refuses to disable or uninstall a plugin that enabled plugins depend on', async () => {
    const disable = await admin('POST', '/api/v1/admin/plugins/audit-forwarder/disable');
    expect(disable.statusCode).toBe(409);
    expect(disable.data.error).toMatchObject({
      code: 'PLUGIN_DEPENDENCY_ERROR',
      details: { dependents: ['notifier'] },
    });
    const uninstall = await admin('DELETE', '/api/v1/admin/plugins/audit-forwarder');
    expect(uninstall.statusCode).toBe(409);
    expect(uninstall.data.error.details.dependents).toEqual(['notifier']);
  });

  it('refuses to enable a plugin whose dependency is disabled', async () => {
    expect((await admin('POST', '/api/v1/admin/plugins/notifier/disable')).statusCode).toBe(200);
    expect((await admin('POST', '/api/v1/admin/plugins/audit-forwarder/disable')).statusCode).toBe(200);
    const enable = await admin('POST', '/api/v1/admin/plugins/notifier/enable');
    expect(enable.statusCode).toBe(409);
    expect(enable.data.error.details.disabled).toEqual(['audit-forwarder']);
  });

  it('answers 404 on the routes of a disabled plugin and stops its subscriptions, then serves again once enabled', async () => {
    const off = await admin('GET', '/api/v1/admin/plugins/audit-forwarder');
    expect(off.data.data.plugin).toMatchObject({ status: 'disabled', enabled: false, health: 'unknown' });
    expect((await admin('GET', '/api/v1/ext/audit-forwarder/status')).statusCode).toBe(404);
    await admin('POST', '/api/v1/events', { event_type: 'shop.order.lost', data: {} });
    const enable = await admin('POST', '/api/v1/admin/plugins/audit-forwarder/enable');
    expect(enable.data.data.plugin).toMatchObject({ status: 'active', enabled: true });
    expect((await admin('GET', '/api/v1/ext/audit-forwarder/status')).statusCode).toBe(200);
    await admin('POST', '/api/v1/events', { event_type: 'shop.order.found', data: {} });
    expect(
      await eventually(async () => lines().some((l) => l.event_type === 'shop.order.found'), 10_000),
    ).toBe(true);
    expect(lines().some((l) => l.event_type === 'shop.order.lost')).toBe(false);
  });

  it('announces each lifecycle step as a platform event and audits each admin change', async () => {
    const types = ['plugin.installed', 'plugin.loaded', 'plugin.enabled', 'plugin.disabled'];
    const seen = async () => {
      const res = await admin('GET', '/api/v1/events?event_type=plugin.*&per_page=100');
      const found = new Set(res.data.data.events.map((e: { event_type: string }) => e.event_type));
      return types.every((type) => found.has(type));
    };
    expect(await eventually(seen)).toBe(true);
    const audit = await admin('GET', '/api/v1/admin/audit-log?action=plugin.*');
    const actions = audit.data.data.audit_entries.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['plugin.install', 'plugin.enable', 'plugin.disable']));
    expect(audit.data.data.audit_entries[0]).toMatchObject({ admin_user: 'admin', resource_type: 'plugin' });
  });

  it('reports the plugin manager as the plugins component of /status, with measured counts', async () => {
    const res = await admin('GET', '/api/v1/services/plugin_manager');
    expect(res.statusCode).toBe(200);
    const status = await admin('GET', '/api/v1/status');
    expect(status.data.data.components.plugins).toMatchObject({ loaded: 1, active: 1, failed: 0 });
  });

  it('offers the resource API: read with read:plugins, change with write:plugins', async () => {
    const user = await t.createUser('viewer', ['user']);
    const list = await t.request('GET', '/api/v1/plugins', { token: user.access });
    expect(list.statusCode).toBe(200);
    expect(list.data.data.plugins.map((p: { id: string }) => p.id)).toEqual(['audit-forwarder', 'notifier']);
    const detail = await t.request('GET', '/api/v1/plugins/notifier', { token: user.access });
    // The chat's webhook URL often carries its token: masked like the secret.
    expect(detail.data.data.plugin.configuration).toMatchObject({ url: '********', secret: '********' });
    expect(detail.body).not.toContain('127.0.0.1:9/hook');
    const refused = await t.request('POST', '/api/v1/plugins', {
      token: user.access,
      body: { name: 'scheduler' },
    });
    expect(refused.statusCode).toBe(403);
    expect(refused.data.error.details.required_permission).toBe('write:plugins');
    const created = await admin('POST', '/api/v1/plugins', {
      name: 'scheduler',
      version: '1.0.0',
      enabled: false,
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.data.data.plugin).toMatchObject({ id: 'scheduler', status: 'installed', enabled: false });
    const enabled = await admin('PUT', '/api/v1/plugins/scheduler', { enabled: true });
    expect(enabled.data.data.plugin.status).toBe('active');
    const removed = await admin('DELETE', '/api/v1/plugins/scheduler');
    expect(removed.statusCode).toBe(200);
    expect((await admin('GET', '/api/v1/plugins/scheduler')).statusCode).toBe(404);
  });

  it('uninstalls with the admin API once nothing depends on it', async () => {
    expect((await admin('DELETE', '/api/v1/admin/plugins/notifier')).statusCode).toBe(200);
    const res = await admin('DELETE', '/api/v1/admin/plugins/audit-forwarder');
    expect(res.statusCode).toBe(200);
    expect(res.data.message).toMatch(/uninstalled/);
    expect((await admin('GET', '/api/v1/admin/plugins')).data.data.plugins).toEqual([]);
    expect((await admin('GET', '/api/v1/ext/audit-forwarder/status')).statusCode).toBe(404);
    const subs = await admin('GET', '/api/v1/events/subscriptions?delivery_method=plugin');
    expect(subs.data.data.subscriptions).toEqual([]);
    expect((await admin('POST', '/api/v1/admin/plugins/ghost/enable')).statusCode).toBe(404);
  });

  it('orders plugins by dependency first, then by name', async () => {
    for (const name of ['order-zulu', 'order-alpha', 'order-beta']) {
      const res = await admin('POST', '/api/v1/admin/plugins/install', { plugin_name: name });
      expect(res.statusCode, res.body).toBe(201);
    }
    const list = await admin('GET', '/api/v1/admin/plugins');
    expect(
      list.data.data.plugins.map((p: { id: string; load_order: number }) => [p.id, p.load_order]),
    ).toEqual([
      ['order-beta', 1],
      ['order-zulu', 2],
      ['order-alpha', 3],
    ]);
    const detail = await admin('GET', '/api/v1/admin/plugins/order-alpha');
    expect(detail.data.data.plugin.load_order).toBe(3);
  });
});
