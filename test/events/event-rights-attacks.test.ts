import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { RawSse, until as untilNow, WsClient } from '../streams/stream-clients.js';
import { Receiver } from '../webhooks/receiver.js';
import { createSubscription, FAST_WEBHOOKS, until } from '../webhooks/webhook-fixtures.js';

/**
 * Issue 23, items 1 and 2: the platform's own events (auth.*, user.*, security.*, system.*, plugin.*, backup.*,
 * task.*) are read only by holders of the permission that guards the same data elsewhere, on every way events
 * are read; and nobody but the platform emits them.
 */
const WATCHER = `
const received = [];
export default {
  async setup(ctx) {
    await ctx.events.subscribe(['security.*'], (event) => { received.push(event.event_type); });
    ctx.routes.get('/received', () => ({ received }));
    ctx.routes.post('/emit', async (req) => {
      try {
        return { emitted: await ctx.events.emit(req.body.type, {}) };
      } catch (err) {
        return { refused: String(err && err.message) };
      }
    });
  },
};`;

type Person = { id: string; access: string };

describe('who may read and forge the platform events', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let base: string;
  let admin: string;
  let plain: Person;
  let moderator: Person;
  let receiver: Receiver;
  const open: { close(): void }[] = [];
  /** One stored event of each family, by type. */
  const stored = new Map<string, string>();

  const list = async (token: string, query = '') => {
    const res = await t.request('GET', `/api/v1/events?per_page=100${query}`, { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.data.data as {
      events: { event_id: string; event_type: string }[];
      pagination: { total: number };
    };
  };
  const types = async (token: string, query = '') =>
    (await list(token, query)).events.map((e) => e.event_type);
  const emit = async (token: string, body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/events', { token, body });
  const emitted = async (token: string, body: Record<string, unknown>) => {
    const res = await emit(token, body);
    expect(res.statusCode, res.body).toBe(201);
    return res.data.data.event.event_id as string;
  };
  /** The newest stored event of a type, as an admin sees it. */
  const newest = async (type: string): Promise<string> => {
    let id: string | undefined;
    await until(async () => {
      id = (await list(admin, `&event_type=${type}`)).events[0]?.event_id;
      return id !== undefined;
    }, `a stored ${type}`);
    return id!;
  };
  const narrowedKey = async (scopes: string[]) => {
    const res = await t.request('POST', '/api/v1/auth/api-keys', {
      token: admin,
      body: { name: scopes.join(' '), scopes },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.data.data.key as string;
  };
  let guesses = 0;
  /** A failed login (of a name that does not exist, so no account locks): an `auth.login_failed`. */
  const failLogin = () =>
    t.request('POST', '/api/v1/auth/login', {
      body: { username: `rights-guess-${++guesses}`, password: 'not-the-password' },
    });
  const blockIp = (ip: string) =>
    t.request('POST', '/api/v1/admin/security/block-ip', {
      token: admin,
      body: { ip_address: ip, reason: 'test' },
    });

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      {
        name: 'watcher',
        permissions: ['http:routes', 'events:*'],
        events: { emits: ['watch.*', 'security.*', 'plugin.*'], subscribes: ['security.*'] },
      },
      WATCHER,
    );
    t = await startPlatform({
      ...FAST_WEBHOOKS,
      plugins: { repositories: [repo] },
      events: { stream_heartbeat_seconds: 1 },
    });
    base = await t.platform.listen();
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
    const installed = await t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { source: 'repository', plugin_name: 'watcher', config: { enabled: true } },
    });
    expect(installed.statusCode, installed.body).toBe(201);
    plain = await t.createUser('rights-plain', ['user']);
    moderator = await t.createUser('rights-moderator', ['moderator']);
    await failLogin();
    expect((await blockIp('203.0.113.9')).statusCode).toBe(201);
    const config = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { rate_limits: { authenticated: { max: 90_000 } } },
    });
    expect(config.statusCode, config.body).toBe(200);
    for (const type of [
      'auth.login',
      'auth.login_failed',
      'user.created',
      'security.ip_blocked',
      'system.config.updated',
      'plugin.installed',
    ]) {
      stored.set(type, await newest(type));
    }
  });
  afterAll(async () => {
    for (const c of open) c.close();
    await receiver?.close();
    await t?.close();
  });

  it('lists none of the platform events a plain user lacks the permission of; an admin lists them all', async () => {
    await emitted(plain.access, { event_type: 'app.visible', data: {} });
    const seen = await types(plain.access);
    expect(seen).toContain('app.visible');
    for (const type of stored.keys()) expect(seen).not.toContain(type);
    for (const filter of [
      '&event_type=auth.*',
      '&source=auth',
      '&event_type=security.**',
      '&source=system',
    ]) {
      expect((await list(plain.access, filter)).pagination.total, filter).toBe(0);
    }
    const all = await types(admin);
    for (const type of stored.keys()) expect(all).toContain(type);
  });

  it('answers 404 to a plain user fetching a platform event by id, and gives it to an admin', async () => {
    for (const [type, id] of stored) {
      const res = await t.request('GET', `/api/v1/events/${id}`, { token: plain.access });
      expect(res.statusCode, type).toBe(404);
      expect(res.data.error.code).toBe('EVENT_NOT_FOUND');
      const full = await t.request('GET', `/api/v1/events/${id}`, { token: admin });
      expect(full.statusCode, type).toBe(200);
    }
  });

  it('lets a moderator (read:users) read user.created, but not the login events or alerts', async () => {
    const seen = await types(moderator.access);
    expect(seen).toContain('user.created');
    expect(seen).not.toContain('auth.login');
    expect(seen).not.toContain('security.ip_blocked');
    const user = await t.request('GET', `/api/v1/events/${stored.get('user.created')}`, {
      token: moderator.access,
    });
    expect(user.statusCode).toBe(200);
    const login = await t.request('GET', `/api/v1/events/${stored.get('auth.login')}`, {
      token: moderator.access,
    });
    expect(login.statusCode).toBe(404);
  });

  it('reads with the scopes an admin API key was narrowed to, in lists, detail and the audit trail', async () => {
    const onlyEvents = await narrowedKey(['events:subscribe']);
    const security = await narrowedKey(['events:subscribe', 'admin:security', 'admin:system']);
    const narrow = await t.request('GET', '/api/v1/events?per_page=100', { apiKey: onlyEvents });
    const narrowTypes = narrow.data.data.events.map((e: { event_type: string }) => e.event_type);
    for (const type of stored.keys()) expect(narrowTypes).not.toContain(type);
    const wide = await t.request('GET', '/api/v1/events?per_page=100', { apiKey: security });
    const wideTypes = wide.data.data.events.map((e: { event_type: string }) => e.event_type);
    expect(wideTypes).toEqual(
      expect.arrayContaining(['auth.login', 'auth.login_failed', 'security.ip_blocked']),
    );
    expect(wideTypes).not.toContain('user.created');
    expect(wideTypes).not.toContain('system.config.updated');
    const login = stored.get('auth.login')!;
    expect((await t.request('GET', `/api/v1/events/${login}`, { apiKey: onlyEvents })).statusCode).toBe(404);
    expect((await t.request('GET', `/api/v1/events/${login}`, { apiKey: security })).statusCode).toBe(200);
    const config = stored.get('system.config.updated')!;
    const audit = await t.request('GET', `/api/v1/events/${config}/audit`, { apiKey: security });
    expect(audit.statusCode).toBe(404);
    expect(audit.data.error.code).toBe('EVENT_NOT_FOUND');
    expect((await t.request('GET', `/api/v1/events/${login}/audit`, { apiKey: security })).statusCode).toBe(
      200,
    );
  });

  it('streams no platform event a plain user may not read over SSE, and refuses to resume from one', async () => {
    const sse = (token: string, query: string, lastEventId?: string) => {
      const c = new RawSse(`${base}/api/v1/events/stream${query}`, {
        authorization: `Bearer ${token}`,
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      });
      open.push(c);
      return c;
    };
    const mine = sse(plain.access, '?patterns=*');
    const theirs = sse(admin, '?patterns=auth.*,sse.*');
    await Promise.all([mine.ready, theirs.ready]);
    await failLogin();
    const marker = await emitted(plain.access, { event_type: 'sse.marker', data: {} });
    await untilNow(() => theirs.events().some((f) => f.id === marker), 5000, 'the marker for the admin');
    await untilNow(() => mine.events().some((f) => f.id === marker), 5000, 'the marker for the user');
    expect(theirs.events().map((f) => f.event)).toContain('auth.login_failed');
    expect(mine.events().map((f) => f.event)).toEqual(['sse.marker']);

    const resumed = sse(plain.access, '?patterns=*', stored.get('auth.login'));
    await resumed.ready;
    await untilNow(() => resumed.ended || resumed.body.length > 0, 5000, 'the answer');
    expect(resumed.status).toBe(404);
    expect(JSON.parse(resumed.body).error.code).toBe('EVENT_NOT_FOUND');
  });

  it('never hands a plain SSE reader a checkpoint naming a platform event it may not read', async () => {
    const c = new RawSse(`${base}/api/v1/events/stream?patterns=quiet.none`, {
      authorization: `Bearer ${plain.access}`,
    });
    open.push(c);
    await c.ready;
    const checkpoints = () =>
      c.frames.filter((f) => f.id !== undefined && f.data === undefined).map((f) => f.id);
    const visible = await emitted(plain.access, { event_type: 'quiet.noise', data: {} });
    await untilNow(() => checkpoints().includes(visible), 5000, 'a checkpoint of the visible event');
    await failLogin();
    const hidden = await newest('auth.login_failed');
    await new Promise((r) => setTimeout(r, 2300));
    expect(checkpoints()).not.toContain(hidden);
  });

  it('sends no platform event a plain user may not read over WebSocket, nor resumes from one', async () => {
    const ws = new WsClient(`${base.replace(/^http/, 'ws')}/api/v1/events/stream?token=${plain.access}`);
    open.push(ws);
    await ws.opened;
    ws.send({ action: 'subscribe', patterns: ['*'] });
    await untilNow(() => ws.of('subscribed').length === 1);
    await failLogin();
    expect((await blockIp('203.0.113.10')).statusCode).toBe(201);
    const marker = await emitted(plain.access, { event_type: 'ws.marker', data: {} });
    await untilNow(() => ws.of('event').some((m) => m.event.event_id === marker), 5000, 'the marker');
    expect(ws.of('event').map((m) => m.event.event_type)).toEqual(['ws.marker']);

    ws.send({ action: 'subscribe', patterns: ['*'], last_event_id: stored.get('security.ip_blocked') });
    await untilNow(() => ws.of('error').length === 1, 5000, 'the error');
    expect(ws.of('error')[0].error.code).toBe('EVENT_NOT_FOUND');
  });

  it('queues a platform event only for the subscriptions whose owner may read it, and replays likewise', async () => {
    const mine = await createSubscription(t, plain.access, {
      event_patterns: ['*'],
      webhook_config: { url: `${receiver.url}/plain` },
    });
    const moderators = await createSubscription(t, moderator.access, {
      event_patterns: ['user.*', 'sub.*'],
      webhook_config: { url: `${receiver.url}/moderator` },
    });
    const admins = await createSubscription(t, admin, {
      event_patterns: ['auth.**', 'user.*', 'sub.*'],
      webhook_config: { url: `${receiver.url}/admin` },
    });
    await failLogin();
    await t.createUser('rights-newcomer', ['user']);
    const marker = await emitted(admin, { event_type: 'sub.marker', data: {} });
    const at = (path: string) =>
      receiver.requests.filter((r) => r.path === path).map((r) => r.json.event_type);
    await until(
      () => ['/plain', '/moderator', '/admin'].every((p) => at(p).includes('sub.marker')),
      'the marker at every target',
    );
    await until(
      () => at('/admin').includes('auth.login') && at('/admin').includes('user.created'),
      'admin deliveries',
    );
    await until(() => at('/moderator').includes('user.created'), 'the moderator delivery');
    expect(at('/plain')).toEqual(['sub.marker']);
    expect(at('/moderator')).not.toContain('auth.login_failed');
    expect(marker).toBeTruthy();

    const replay = await t.request('POST', '/api/v1/events/replay', {
      token: admin,
      body: {
        event_filter: { event_types: ['auth.login_failed', 'user.created'] },
        target_subscribers: [mine.id, moderators.id, admins.id],
        replay_mode: 'parallel',
      },
    });
    expect(replay.statusCode, replay.body).toBe(202);
    const id = replay.data.data.replay_id as string;
    await until(async () => {
      const res = await t.request('GET', `/api/v1/events/replay/${id}`, { token: admin });
      return res.data.data.replay.status === 'completed';
    }, 'the replay');
    const replayed = (path: string) =>
      receiver.requests
        .filter((r) => r.path === path && r.headers['x-platform-replay'] !== undefined)
        .map((r) => r.json.event_type);
    expect(replayed('/plain')).toEqual([]);
    expect(new Set(replayed('/moderator'))).toEqual(new Set(['user.created']));
    expect(new Set(replayed('/admin'))).toEqual(new Set(['user.created', 'auth.login_failed']));
  });

  it('delivers to a subscription made with a narrowed admin API key only what that key may read', async () => {
    const key = await narrowedKey(['events:subscribe']);
    const res = await t.request('POST', '/api/v1/events/subscriptions', {
      apiKey: key,
      body: { event_patterns: ['auth.**', 'narrow.*'], webhook_config: { url: `${receiver.url}/narrow` } },
    });
    expect(res.statusCode, res.body).toBe(201);
    const wide = await createSubscription(t, admin, {
      event_patterns: ['auth.**', 'narrow.*'],
      webhook_config: { url: `${receiver.url}/wide` },
    });
    await failLogin();
    await emitted(admin, { event_type: 'narrow.marker', data: {} });
    const at = (path: string) =>
      receiver.requests.filter((r) => r.path === path).map((r) => r.json.event_type);
    await until(
      () => at('/wide').includes('auth.login_failed') && at('/wide').includes('narrow.marker'),
      'wide',
    );
    await until(() => at('/narrow').includes('narrow.marker'), 'the marker');
    expect(at('/narrow')).toEqual(['narrow.marker']);
    expect(wide.id).toBeTruthy();
  });

  it("stops delivering a family to a subscription at once when its owner's roles lose its permission", async () => {
    const demoted = await t.createUser('rights-demoted', ['admin']);
    await createSubscription(t, demoted.access, {
      event_patterns: ['auth.**', 'demote.*'],
      webhook_config: { url: `${receiver.url}/demoted` },
    });
    const at = () => receiver.requests.filter((r) => r.path === '/demoted').map((r) => r.json.event_type);
    await failLogin();
    await until(() => at().includes('auth.login_failed'), 'the delivery while an admin');
    const change = await t.request('PUT', `/api/v1/admin/users/${demoted.id}`, {
      token: admin,
      body: { roles: ['user'] },
    });
    expect(change.statusCode, change.body).toBe(200);
    const before = at().length;
    await failLogin();
    await emitted(admin, { event_type: 'demote.marker', data: {} });
    await until(() => at().includes('demote.marker'), 'the marker');
    expect(at().slice(before)).toEqual(['demote.marker']);
  });

  it("still delivers the platform's events to a plugin's subscription", async () => {
    expect((await blockIp('203.0.113.11')).statusCode).toBe(201);
    const got = await eventually(async () => {
      const res = await t.request('GET', '/api/v1/ext/watcher/received', { token: admin });
      return res.data.data.received.includes('security.ip_blocked');
    }, 10_000);
    expect(got).toBe(true);
  });

  it('refuses with 422 naming the field an emit that takes a platform source, even from an admin', async () => {
    for (const source of ['system', 'auth', 'plugin:watcher', 'plugin:anything', 'System', ' auth ']) {
      for (const token of [plain.access, admin]) {
        const res = await emit(token, { event_type: 'app.fake', source, data: {} });
        expect(res.statusCode, source).toBe(422);
        expect(res.data.error).toMatchObject({
          code: 'VALIDATION_ERROR',
          details: { field: 'source', reason: 'reserved for the platform' },
        });
      }
    }
  });

  it('refuses with 422 naming the field an emit of a platform type, in either form', async () => {
    for (const type of [
      'security.alert',
      'auth.login',
      'auth',
      'user.created',
      'system.config.updated',
      'system.restart',
      'plugin.error',
      'backup.created',
      'task.failed',
      'Security.Alert',
    ]) {
      const long = await emit(admin, { event_type: type, data: { forged: true } });
      expect(long.statusCode, type).toBe(422);
      expect(long.data.error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: { field: 'event_type', reason: 'reserved for the platform' },
      });
      const short = await emit(plain.access, { type, data: {} });
      expect(short.statusCode, type).toBe(422);
      expect(short.data.error.details.field).toBe('type');
    }
    // The platform may have raised real alerts (the failed logins): none is from the API.
    expect((await list(admin, '&event_type=security.alert&source=api')).pagination.total).toBe(0);
    // Types outside the platform's families stay free, `user.*` ones the platform does not raise included.
    await emitted(plain.access, { event_type: 'user.registered', source: 'shop', data: {} });
    await emitted(plain.access, { event_type: 'systems.checked', source: 'auth-proxy', data: {} });
  });

  it("lets a plugin emit its own types with source plugin:<id>, and none of the platform's", async () => {
    const ok = await t.request('POST', '/api/v1/ext/watcher/emit', {
      token: admin,
      body: { type: 'watch.seen' },
    });
    expect(ok.statusCode, ok.body).toBe(200);
    const id = ok.data.data.emitted.event_id as string;
    const event = await t.request('GET', `/api/v1/events/${id}`, { token: plain.access });
    expect(event.data.data.event).toMatchObject({ event_type: 'watch.seen', source: 'plugin:watcher' });
    for (const type of ['security.alert', 'plugin.error']) {
      const refused = await t.request('POST', '/api/v1/ext/watcher/emit', { token: admin, body: { type } });
      expect(refused.data.data.refused, type).toContain('reserved for the platform');
    }
    expect((await list(admin, '&source=plugin:watcher&event_type=security.alert')).pagination.total).toBe(0);
  });
});
