import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('the first-party plugins: scheduler, audit-forwarder, notifier', () => {
  let t: TestPlatform;
  let token: string;
  let chat: Server;
  let chatUrl: string;
  const posts: { body: string; signature: string | undefined }[] = [];

  beforeAll(async () => {
    chat = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => {
        body += c.toString();
      });
      req.on('end', () => {
        posts.push({ body, signature: req.headers['x-platform-signature-256'] as string | undefined });
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => chat.listen(0, '127.0.0.1', resolve));
    chatUrl = `http://127.0.0.1:${(chat.address() as AddressInfo).port}/hooks/chat`;
    t = await startPlatform({ webhooks: { poll_interval_ms: 50 } });
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => chat.close(() => resolve()));
  });

  it('scheduler emits the configured events on its cron expressions', async () => {
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: {
        plugin_name: 'scheduler',
        config: {
          jobs: [{ name: 'tick', cron: '* * * * * *', event_type: 'clock.tick', data: { source: 'test' } }],
        },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    const ticked = async () => {
      const events = await t.request('GET', '/api/v1/events?event_type=clock.tick', { token });
      return events.data.data.events.length >= 2;
    };
    expect(await eventually(ticked, 8000)).toBe(true);
    const events = await t.request('GET', '/api/v1/events?event_type=clock.tick', { token });
    const detail = await t.request('GET', `/api/v1/events/${events.data.data.events[0].event_id}`, { token });
    expect(detail.data.data.event).toMatchObject({
      source: 'plugin:scheduler',
      data: { source: 'test', job: 'tick' },
    });
    const jobs = await t.request('GET', '/api/v1/ext/scheduler/jobs', { token });
    expect(jobs.data.data.jobs[0]).toMatchObject({ name: 'tick', event_type: 'clock.tick' });
    await t.request('POST', '/api/v1/admin/plugins/scheduler/disable', { token });
  });

  it('refuses a scheduler configuration that does not match its schema', async () => {
    await t.request('DELETE', '/api/v1/admin/plugins/scheduler', { token });
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'scheduler', config: { jobs: [{ cron: '* * * * *' }] } },
    });
    expect(res.statusCode).toBe(422);
    expect(res.data.error.details.field).toBe('config.jobs.0.event_type');
  });

  it('notifier depends on audit-forwarder and posts chosen events to the chat webhook, signed with its secret', async () => {
    const path = 'audit.jsonl';
    const fwd = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'audit-forwarder', config: { path } },
    });
    expect(fwd.statusCode, fwd.body).toBe(201);
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: {
        plugin_name: 'notifier',
        config: { url: chatUrl, secret: 'chat-secret', patterns: ['deploy.*'] },
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.data.data.plugin.dependencies).toEqual(['audit-forwarder']);
    await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'deploy.finished', data: { app: 'shop' } },
    });
    expect(await eventually(async () => posts.length > 0, 10_000)).toBe(true);
    const post = posts[0]!;
    const body = JSON.parse(post.body);
    expect(body).toMatchObject({
      text: 'deploy.finished from api',
      event: { event_type: 'deploy.finished', data: { app: 'shop' } },
    });
    expect(post.signature).toBe(
      `sha256=${createHmac('sha256', 'chat-secret').update(post.body).digest('hex')}`,
    );
    const detail = await t.request('GET', '/api/v1/admin/plugins/notifier', { token });
    expect(detail.data.data.plugin.configuration.secret).toBe('********');
    expect(detail.body).not.toContain('chat-secret');
  });

  it("audit-forwarder writes into the plugin's own data folder by default, removed on uninstall", async () => {
    await t.request('DELETE', '/api/v1/admin/plugins/notifier', { token });
    await t.request('DELETE', '/api/v1/admin/plugins/audit-forwarder', { token });
    const res = await t.request('POST', '/api/v1/admin/plugins/install', {
      token,
      body: { plugin_name: 'audit-forwarder' },
    });
    expect(res.statusCode, res.body).toBe(201);
    const folder = join(
      (t.storage as { storage: { data_dir: string } }).storage.data_dir,
      'plugin-data',
      'audit-forwarder',
    );
    const status = await t.request('GET', '/api/v1/ext/audit-forwarder/status', { token });
    // Relative to the plugin's data folder: the server's paths are shown to no one.
    expect(status.data.data.path).toBe('audit-events.jsonl');
    await t.request('POST', '/api/v1/events', { token, body: { event_type: 'misc.thing', data: {} } });
    const written = async () =>
      existsSync(join(folder, 'audit-events.jsonl')) &&
      readFileSync(join(folder, 'audit-events.jsonl'), 'utf8').includes('misc.thing');
    expect(await eventually(written, 10_000)).toBe(true);
    await t.request('DELETE', '/api/v1/admin/plugins/audit-forwarder', { token });
    expect(existsSync(folder)).toBe(false);
  });
});
