import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from './plugin-fixtures.js';

const KITCHEN = `
const received = [];
export default {
  async setup(ctx) {
    ctx.routes.hook((req) => {
      if (req.headers['x-block'] === 'yes') throw ctx.routes.error('AUTHORIZATION_DENIED', 'blocked by kitchen');
      if (req.headers['x-short'] === 'yes') return { short: true };
    });
    ctx.routes.get('/greet/:name', (req) => ({
      message: ctx.config.greeting + ', ' + req.params.name,
      user: req.user ? req.user.username : null,
      query: req.query,
      has_authorization: 'authorization' in req.headers,
    }));
    ctx.routes.get('/open', (req) => ({ open: true, user: req.user }), { access: 'public' });
    ctx.routes.get('/metrics-only', () => ({ ok: true }), { access: { permission: 'read:metrics' } });
    ctx.routes.post('/items', async (req) => {
      if (!req.body || typeof req.body.name !== 'string') {
        throw ctx.routes.error('VALIDATION_ERROR', 'name is required', { field: 'name', reason: 'is required' });
      }
      await ctx.storage.set('item:' + req.body.name, req.body);
      return ctx.routes.respond(201, { stored: req.body.name }, { 'x-kitchen': 'yes' });
    });
    ctx.routes.get('/items/:name', async (req) => {
      const item = await ctx.storage.get('item:' + req.params.name);
      if (item === undefined) throw ctx.routes.error('RESOURCE_NOT_FOUND', 'no such item');
      return { item, keys: await ctx.storage.keys('item:') };
    });
    ctx.routes.post('/cache/:key', async (req) => {
      await ctx.cache.set(req.params.key, req.body, 60);
      return { cached: await ctx.cache.get(req.params.key) };
    });
    ctx.routes.post('/emit', async (req) => ctx.events.emit(req.body.type, req.body.data));
    ctx.routes.post('/task', async () => ctx.tasks.start('double', { n: 21 }));
    ctx.routes.get('/received', () => ({ received }));
    ctx.routes.get('/config', () => ({ token: ctx.config.token }));
    ctx.routes.get('/hooks', () => ({ hooks: ctx.config.hooks }));
    ctx.routes.post('/health', (req) => { ctx.health.report(req.body.status, req.body.details); return null; });
    ctx.routes.post('/log', (req) => { for (const line of req.body.lines) ctx.logger.info(line); return null; });
    ctx.tasks.register('double', (task) => ({ doubled: task.details.n * 2 }));
    await ctx.events.subscribe(['order.*'], (event, delivery) => { received.push({ type: event.event_type, attempt: delivery.attempt }); });
    ctx.logger.info('kitchen ready', { greeting: ctx.config.greeting });
  },
};`;

const ECHO = `export default { setup(ctx) { ctx.routes.get('/greet/:name', (req) => ({ echo: req.params.name })); } };`;

describe('the ctx of a plugin: routes, storage, cache, events, tasks, config, logger, health', () => {
  let t: TestPlatform;
  let token: string;
  let user: { access: string };

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      {
        name: 'kitchen',
        description: 'every capability',
        permissions: ['http:routes', 'storage:use', 'cache:use', 'events:*', 'tasks:register'],
        events: { emits: ['kitchen.*'], subscribes: ['order.*'] },
        config_schema: {
          type: 'object',
          properties: {
            greeting: { type: 'string', default: 'hello' },
            token: { type: 'string', secret: true, default: '' },
            hooks: {
              type: 'array',
              default: [],
              items: {
                type: 'object',
                properties: { url: { type: 'string' }, key: { type: 'string', secret: true } },
              },
            },
          },
          additionalProperties: false,
        },
      },
      KITCHEN,
    );
    writePlugin(repo, { name: 'echo', permissions: ['http:routes'] }, ECHO);
    t = await startPlatform({ plugins: { repositories: [repo] }, webhooks: { poll_interval_ms: 50 } });
    token = await t.adminToken();
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: {
        source: 'repository',
        plugin_name: 'kitchen',
        config: { greeting: 'hi', token: 's3cret-value' },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { source: 'repository', plugin_name: 'echo' },
    });
    user = await t.createUser('cook', ['user']);
  });
  afterAll(async () => t?.close());

  it('mounts routes under /api/v1/ext/{id}/ with params, query and the caller, and requires authentication by default', async () => {
    const res = await t.request('GET', '/api/v1/ext/kitchen/greet/ada?x=1', { token: user.access });
    expect(res.statusCode).toBe(200);
    expect(res.data).toMatchObject({
      success: true,
      data: { message: 'hi, ada', user: 'cook', query: { x: '1' } },
    });
    expect(res.data.data.has_authorization).toBe(false);
    const anonymous = await t.request('GET', '/api/v1/ext/kitchen/greet/ada');
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.data.error.code).toBe('AUTHENTICATION_FAILED');
    const badToken = await t.request('GET', '/api/v1/ext/kitchen/greet/ada', { token: 'not-a-token' });
    expect(badToken.statusCode).toBe(401);
    expect(badToken.data.error.details.reason).not.toBe('missing_credentials');
  });

  it('honours a route declared public, and one that needs a permission', async () => {
    const open = await t.request('GET', '/api/v1/ext/kitchen/open');
    expect(open.data.data).toEqual({ open: true, user: null });
    const denied = await t.request('GET', '/api/v1/ext/kitchen/metrics-only', { token: user.access });
    expect(denied.statusCode).toBe(403);
    expect(denied.data.error).toMatchObject({
      code: 'AUTHORIZATION_DENIED',
      details: { required_permission: 'read:metrics' },
    });
    expect((await t.request('GET', '/api/v1/ext/kitchen/metrics-only', { token })).statusCode).toBe(200);
  });

  it('keeps each plugin in its own route table, and answers 404 for unknown plugins and routes', async () => {
    expect((await t.request('GET', '/api/v1/ext/echo/greet/bob', { token })).data.data).toEqual({
      echo: 'bob',
    });
    const unknown = await t.request('GET', '/api/v1/ext/nothing/greet/bob', { token });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.data.error.code).toBe('RESOURCE_NOT_FOUND');
    expect((await t.request('GET', '/api/v1/ext/kitchen/nowhere', { token })).statusCode).toBe(404);
    expect((await t.request('DELETE', '/api/v1/ext/kitchen/greet/ada', { token })).statusCode).toBe(404);
  });

  it("runs a plugin's route hooks before its own routes only: they never reach other plugins or the platform", async () => {
    const blocked = await t.request('GET', '/api/v1/ext/kitchen/greet/ada', {
      token,
      headers: { 'x-block': 'yes' },
    });
    expect(blocked.statusCode).toBe(403);
    expect(blocked.data.error.message).toBe('blocked by kitchen');
    const short = await t.request('GET', '/api/v1/ext/kitchen/greet/ada', {
      token,
      headers: { 'x-short': 'yes' },
    });
    expect(short.data.data).toEqual({ short: true });
    const echo = await t.request('GET', '/api/v1/ext/echo/greet/bob', {
      token,
      headers: { 'x-block': 'yes' },
    });
    expect(echo.data.data).toEqual({ echo: 'bob' });
    const platform = await t.request('GET', '/api/v1/auth/me', { token, headers: { 'x-block': 'yes' } });
    expect(platform.statusCode).toBe(200);
  });

  it('answers with a chosen status and headers, and with catalogued client errors that are not failures', async () => {
    const invalid = await t.request('POST', '/api/v1/ext/kitchen/items', { token, body: { nope: 1 } });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.data.error).toMatchObject({ code: 'VALIDATION_ERROR', details: { field: 'name' } });
    const created = await t.request('POST', '/api/v1/ext/kitchen/items', {
      token,
      body: { name: 'pan', size: 3 },
    });
    expect(created.statusCode).toBe(201);
    expect(created.headers['x-kitchen']).toBe('yes');
    expect(created.data.data).toEqual({ stored: 'pan' });
    const missing = await t.request('GET', '/api/v1/ext/kitchen/items/pot', { token });
    expect(missing.statusCode).toBe(404);
    expect(missing.data.error.code).toBe('RESOURCE_NOT_FOUND');
  });

  it('keeps storage across a disable and enable, and uses its own cache namespace', async () => {
    expect((await t.request('POST', '/api/v1/admin/plugins/kitchen/disable', { token })).statusCode).toBe(
      200,
    );
    expect((await t.request('GET', '/api/v1/ext/kitchen/items/pan', { token })).statusCode).toBe(404);
    expect((await t.request('POST', '/api/v1/admin/plugins/kitchen/enable', { token })).statusCode).toBe(200);
    const item = await t.request('GET', '/api/v1/ext/kitchen/items/pan', { token });
    expect(item.data.data).toEqual({ item: { name: 'pan', size: 3 }, keys: ['item:pan'] });
    const cached = await t.request('POST', '/api/v1/ext/kitchen/cache/k1', { token, body: { v: 42 } });
    expect(cached.data.data).toEqual({ cached: { v: 42 } });
  });

  it('emits events through the real emit path with source plugin:<id>, only of the declared types', async () => {
    const res = await t.request('POST', '/api/v1/ext/kitchen/emit', {
      token,
      body: { type: 'kitchen.order_ready', data: { table: 4 } },
    });
    expect(res.statusCode).toBe(200);
    const event = await t.request('GET', `/api/v1/events/${res.data.data.event_id}`, { token });
    expect(event.data.data.event).toMatchObject({
      event_type: 'kitchen.order_ready',
      source: 'plugin:kitchen',
      data: { table: 4 },
    });
    const undeclared = await t.request('POST', '/api/v1/ext/kitchen/emit', {
      token,
      body: { type: 'billing.paid', data: {} },
    });
    expect(undeclared.statusCode).toBe(500);
  });

  it('delivers subscribed events from the outbox through a durable plugin subscription', async () => {
    await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'order.created', data: { id: 1 } },
    });
    const got = await eventually(async () => {
      const res = await t.request('GET', '/api/v1/ext/kitchen/received', { token });
      return res.data.data.received.some((r: { type: string }) => r.type === 'order.created');
    }, 10_000);
    expect(got).toBe(true);
    const subs = await t.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', { token });
    expect(subs.data.data.subscriptions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ delivery_method: 'plugin', event_patterns: ['order.*'], status: 'active' }),
      ]),
    );
  });

  it('pauses its subscription while disabled: events emitted meanwhile are not delivered', async () => {
    await t.request('POST', '/api/v1/admin/plugins/kitchen/disable', { token });
    const subs = await t.request('GET', '/api/v1/events/subscriptions?delivery_method=plugin', { token });
    const sub = subs.data.data.subscriptions.find((s: { event_patterns: string[] }) =>
      s.event_patterns.includes('order.*'),
    );
    expect(sub.status).toBe('paused');
    await t.request('POST', '/api/v1/events', { token, body: { event_type: 'order.cancelled', data: {} } });
    await t.request('POST', '/api/v1/admin/plugins/kitchen/enable', { token });
    await t.request('POST', '/api/v1/events', { token, body: { event_type: 'order.shipped', data: {} } });
    expect(
      await eventually(async () => {
        const res = await t.request('GET', '/api/v1/ext/kitchen/received', { token });
        return res.data.data.received.some((r: { type: string }) => r.type === 'order.shipped');
      }, 10_000),
    ).toBe(true);
    const res = await t.request('GET', '/api/v1/ext/kitchen/received', { token });
    expect(res.data.data.received.map((r: { type: string }) => r.type)).not.toContain('order.cancelled');
  });

  it('registers task types prefixed with the plugin id and runs them', async () => {
    const started = await t.request('POST', '/api/v1/ext/kitchen/task', { token });
    const taskId = started.data.data.task_id;
    expect(
      await eventually(
        async () =>
          (await t.request('GET', `/api/v1/tasks/${taskId}`, { token })).data.data?.status === 'completed',
      ),
    ).toBe(true);
    const task = (await t.request('GET', `/api/v1/tasks/${taskId}`, { token })).data.data;
    expect(task).toMatchObject({ type: 'kitchen:double', result: { doubled: 42 } });
  });

  it('gives the plugin its validated config, and masks the secret in every response', async () => {
    expect((await t.request('GET', '/api/v1/ext/kitchen/config', { token })).data.data).toEqual({
      token: 's3cret-value',
    });
    const detail = await t.request('GET', '/api/v1/admin/plugins/kitchen', { token });
    expect(detail.data.data.plugin.configuration).toEqual({ greeting: 'hi', token: '********', hooks: [] });
    expect(detail.body).not.toContain('s3cret-value');
    const resource = await t.request('GET', '/api/v1/plugins/kitchen', { token: user.access });
    expect(resource.body).not.toContain('s3cret-value');
    // Sending the mask back keeps the secret; other keys change and the plugin is reloaded with them.
    const patched = await t.request('PATCH', '/api/v1/plugins/kitchen', {
      token,
      body: { config: { greeting: 'hey', token: '********' } },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await t.request('GET', '/api/v1/ext/kitchen/config', { token })).data.data).toEqual({
      token: 's3cret-value',
    });
    expect((await t.request('GET', '/api/v1/ext/kitchen/greet/x', { token })).data.data.message).toBe(
      'hey, x',
    );
    const invalid = await t.request('PATCH', '/api/v1/plugins/kitchen', {
      token,
      body: { config: { greeting: 5 } },
    });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.data.error.details.field).toBe('config.greeting');
  });

  it('stores the secret of the configuration encrypted, and still gives it to the plugin in clear', async () => {
    const stored = await t.platform.context.database.db
      .selectFrom('plugins')
      .select('config')
      .where('id', '=', 'kitchen')
      .executeTakeFirstOrThrow();
    expect(stored.config).not.toContain('s3cret-value');
    expect(JSON.parse(stored.config)).toMatchObject({ token: expect.stringMatching(/^sealed:v1\./) });
    // A new secret is sealed too, and reaches the reloaded plugin.
    const changed = await t.request('PATCH', '/api/v1/plugins/kitchen', {
      token,
      body: { config: { greeting: 'hey', token: 'an0ther-secret' } },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.body).not.toContain('an0ther-secret');
    expect((await t.request('GET', '/api/v1/ext/kitchen/config', { token })).data.data).toEqual({
      token: 'an0ther-secret',
    });
    const rows = await t.platform.context.database.db.selectFrom('plugins').select('config').execute();
    expect(JSON.stringify(rows)).not.toContain('an0ther-secret');
  });

  it('masks and seals secrets inside array items too, and keeps them when sent back masked', async () => {
    const hooks = [{ url: 'https://a.example', key: 'arr4y-secret' }];
    const set = await t.request('PATCH', '/api/v1/plugins/kitchen', {
      token,
      body: { config: { greeting: 'hey', token: '********', hooks } },
    });
    expect(set.statusCode, set.body).toBe(200);
    const detail = await t.request('GET', '/api/v1/admin/plugins/kitchen', { token });
    expect(detail.data.data.plugin.configuration.hooks).toEqual([
      { url: 'https://a.example', key: '********' },
    ]);
    const rows = await t.platform.context.database.db.selectFrom('plugins').select('config').execute();
    expect(JSON.stringify(rows)).not.toContain('arr4y-secret');
    const back = await t.request('PUT', '/api/v1/plugins/kitchen', {
      token,
      body: { config: detail.data.data.plugin.configuration },
    });
    expect(back.statusCode, back.body).toBe(200);
    expect((await t.request('GET', '/api/v1/ext/kitchen/hooks', { token })).data.data).toEqual({ hooks });
    expect((await t.request('GET', '/api/v1/ext/kitchen/config', { token })).data.data).toEqual({
      token: 'an0ther-secret',
    });
  });

  it('seals a secret stored in clear (before secrets were sealed) when an instance starts', async () => {
    const db = t.platform.context.database.db;
    const clear = JSON.stringify({ greeting: 'hey', token: 'an0ther-secret' });
    await db.updateTable('plugins').set({ config: clear }).where('id', '=', 'kitchen').execute();
    const other = await startPlatform(
      { plugins: { repositories: [] }, webhooks: { poll_interval_ms: 50 } },
      { storage: t.storage },
    );
    try {
      const stored = await db
        .selectFrom('plugins')
        .select('config')
        .where('id', '=', 'kitchen')
        .executeTakeFirstOrThrow();
      expect(stored.config).not.toContain('an0ther-secret');
      const otherToken = await other.adminToken();
      const config = await other.request('GET', '/api/v1/ext/kitchen/config', { token: otherToken });
      expect(config.data.data).toEqual({ token: 'an0ther-secret' });
    } finally {
      await other.close();
    }
  });

  it('keeps the logger lines as the plugin logs, and reports the health the plugin sets', async () => {
    const detail = (await t.request('GET', '/api/v1/admin/plugins/kitchen', { token })).data.data.plugin;
    expect(detail.logs).toEqual(
      expect.arrayContaining([expect.objectContaining({ level: 'INFO', message: 'kitchen ready' })]),
    );
    await t.request('POST', '/api/v1/ext/kitchen/health', {
      token,
      body: { status: 'unhealthy', details: { oven: 'cold' } },
    });
    const after = (await t.request('GET', '/api/v1/admin/plugins/kitchen', { token })).data.data.plugin;
    expect(after).toMatchObject({ health: 'unhealthy', health_details: { oven: 'cold' } });
    await t.request('POST', '/api/v1/ext/kitchen/health', { token, body: { status: 'healthy' } });
  });

  it('keeps log lines holding text PostgreSQL refuses (NUL, half a surrogate pair) with it replaced, and the lines around them', async () => {
    const lines = ['line one', 'NUL \u0000 and a lone \ud800 here', `${'b'.repeat(1999)}😀`, 'line four'];
    const res = await t.request('POST', '/api/v1/ext/kitchen/log', { token, body: { lines } });
    expect(res.statusCode, res.body).toBeLessThan(300);
    const detail = (await t.request('GET', '/api/v1/admin/plugins/kitchen', { token })).data.data.plugin;
    const messages = (detail.logs as { message: string }[]).map((l) => l.message);
    const at = messages.indexOf('line one');
    expect(messages.slice(at, at + 4)).toEqual([
      'line one',
      'NUL \ufffd and a lone \ufffd here',
      `${'b'.repeat(1999)}\ufffd…`,
      'line four',
    ]);
  });

  it('reports measured metrics: requests, response time, requests per minute, error rate', async () => {
    for (let i = 0; i < 3; i++) await t.request('GET', '/api/v1/ext/echo/greet/m', { token });
    const { metrics } = (await t.request('GET', '/api/v1/admin/plugins/echo', { token })).data.data.plugin;
    expect(metrics.requests_handled).toBeGreaterThanOrEqual(4);
    expect(metrics.requests_per_minute).toBeGreaterThanOrEqual(4);
    expect(metrics.average_response_time).toBeGreaterThan(0);
    expect(metrics).toMatchObject({ errors: 0, error_rate: 0, memory_usage_mb: null });
    const list = await t.request('GET', '/api/v1/admin/plugins', { token });
    const echo = list.data.data.plugins.find((p: { id: string }) => p.id === 'echo');
    expect(echo.metrics.requests_handled).toBe(metrics.requests_handled);
    expect(echo.endpoints).toEqual(['GET /api/v1/ext/echo/greet/:name']);
  });
});
