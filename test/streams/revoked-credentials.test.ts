import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessTokens } from '../../src/auth/access-tokens.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { RawSse, until, WsClient } from './stream-clients.js';

const JWT_SECRET = 'revoked-credentials-test-secret-0123456789abcdef';

/**
 * Streams end once their credentials stop being valid. Changes are made through instance `t`; the streams are
 * open on instance `s` (a second instance on the same storage in the cluster project, the same one otherwise).
 */
function setUp(heartbeatSeconds: number) {
  const ctx = {} as {
    t: TestPlatform;
    s: TestPlatform;
    base: string;
    admin: string;
    open: { close(): void }[];
  };
  beforeAll(async () => {
    const overrides = {
      events: { stream_heartbeat_seconds: heartbeatSeconds },
      auth: { jwt_secret: JWT_SECRET },
    };
    ctx.t = await startPlatform(overrides);
    ctx.s = ctx.t.backend === 'cluster' ? await startPlatform(overrides, { storage: ctx.t.storage }) : ctx.t;
    ctx.base = await ctx.s.platform.listen();
    ctx.admin = await ctx.t.adminToken();
    ctx.open = [];
  });
  afterAll(async () => {
    for (const c of ctx.open) c.close();
    if (ctx.s !== ctx.t) await ctx.s.platform.close();
    await ctx.t.close();
  });
  return ctx;
}

type Ctx = ReturnType<typeof setUp>;

/** An SSE and a WebSocket stream of `patterns`, opened with `credential` (an access token or an API key). */
async function streams(ctx: Ctx, credential: string, patterns = 'rv.*') {
  const query = `/api/v1/events/stream?patterns=${patterns}&token=${credential}`;
  const sse = new RawSse(`${ctx.base}${query}`);
  const ws = new WsClient(`${ctx.base.replace(/^http/, 'ws')}${query}`);
  ctx.open.push(sse, ws);
  await Promise.all([sse.ready, ws.opened]);
  expect(sse.status).toBe(200);
  await until(() => ws.of('subscribed').length === 1);
  return { sse, ws };
}

async function emit(ctx: Ctx, type: string, token = ctx.admin, extra: Record<string, unknown> = {}) {
  const res = await ctx.t.request('POST', '/api/v1/events', { token, body: { event_type: type, ...extra } });
  expect(res.statusCode).toBe(201);
  return res.data.data.event.event_id as string;
}

async function received(pair: { sse: RawSse; ws: WsClient }, id: string) {
  await until(
    () =>
      pair.sse.events().some((f) => f.id === id) && pair.ws.of('event').some((m) => m.event.event_id === id),
    5000,
    `event ${id} on both streams`,
  );
}

/**
 * Both streams ended with the final `credentials_revoked` message, whose resume point is the last event they
 * were sent or a later one that did not match (the platform's own events about the change, say).
 */
async function expectRevoked(pair: { sse: RawSse; ws: WsClient }, lastSent: string, ms: number) {
  await until(() => pair.sse.ended && pair.ws.closeCode !== undefined, ms, 'both streams to end');
  const frame = pair.sse.frames.find((f) => f.event === 'credentials_revoked');
  expect(frame, 'the SSE stream ends with a credentials_revoked frame').toBeDefined();
  const message = pair.ws.messages.at(-1);
  for (const final of [JSON.parse(frame!.data!), message]) {
    expect(final).toMatchObject({ reason: 'credentials_revoked', message: expect.any(String) });
    // Event ids sort by time: the resume point is not before the last event sent.
    expect(final.last_event_id >= lastSent, `${final.last_event_id} after ${lastSent}`).toBe(true);
  }
  expect(message.message_type).toBe('credentials_revoked');
  expect(pair.ws.closeCode).toBe(1001);
}

// A long heartbeat: a stream that ends within a few seconds was ended by the revocation itself.
describe('streams of revoked credentials end at once', { timeout: 20_000 }, () => {
  const ctx = setUp(60);

  it('ends the streams of a suspended user, opened with an access token or an API key', async () => {
    const u = await ctx.t.createUser('rv-suspended');
    const key = (
      await ctx.t.request('POST', '/api/v1/auth/api-keys', { token: u.access, body: { name: 'stream' } })
    ).data.data.key as string;
    const byToken = await streams(ctx, u.access);
    const byKey = await streams(ctx, key);
    const before = await emit(ctx, 'rv.before');
    await Promise.all([received(byToken, before), received(byKey, before)]);

    const res = await ctx.t.request('POST', `/api/v1/admin/users/${u.id}/suspend`, {
      token: ctx.admin,
      body: { reason: 'stream test', notify_user: false },
    });
    expect(res.statusCode).toBe(200);
    await expectRevoked(byToken, before, 5000);
    await expectRevoked(byKey, before, 5000);
    await emit(ctx, 'rv.after');
    await new Promise((r) => setTimeout(r, 200));
    // Nothing after the final frame: the one event, then the end.
    expect(byToken.sse.events().map((f) => f.event)).toEqual(['rv.before', 'credentials_revoked']);
    expect(byKey.ws.of('event')).toHaveLength(1);
  });

  it('ends the streams of a deleted user', async () => {
    const u = await ctx.t.createUser('rv-deleted');
    const pair = await streams(ctx, u.access);
    const before = await emit(ctx, 'rv.before');
    await received(pair, before);
    expect(
      (await ctx.t.request('DELETE', `/api/v1/admin/users/${u.id}`, { token: ctx.admin })).statusCode,
    ).toBe(200);
    await expectRevoked(pair, before, 5000);
  });

  it('ends the streams of a session that logged out, not those of the same user’s other sessions', async () => {
    const u = await ctx.t.createUser('rv-logout');
    const other = await ctx.t.login('rv-logout', 'user-password-1');
    const leaving = await streams(ctx, u.access);
    const staying = await streams(ctx, other.access);
    const before = await emit(ctx, 'rv.before');
    await Promise.all([received(leaving, before), received(staying, before)]);
    expect((await ctx.t.request('POST', '/api/v1/auth/logout', { token: u.access })).statusCode).toBe(200);
    await expectRevoked(leaving, before, 5000);
    const after = await emit(ctx, 'rv.after');
    await received(staying, after);
    expect(staying.sse.ended).toBe(false);
  });

  it('ends the streams of a revoked API key, not those of the owner’s other keys', async () => {
    const u = await ctx.t.createUser('rv-key');
    const create = async (name: string) =>
      (await ctx.t.request('POST', '/api/v1/auth/api-keys', { token: u.access, body: { name } })).data.data;
    const revoked = await create('revoked');
    const kept = await create('kept');
    const leaving = await streams(ctx, revoked.key);
    const staying = await streams(ctx, kept.key);
    const before = await emit(ctx, 'rv.before');
    await Promise.all([received(leaving, before), received(staying, before)]);
    const del = await ctx.t.request('DELETE', `/api/v1/auth/api-keys/${revoked.api_key.id}`, {
      token: u.access,
    });
    expect(del.statusCode).toBe(200);
    await expectRevoked(leaving, before, 5000);
    const after = await emit(ctx, 'rv.after');
    await received(staying, after);
  });

  it('stops showing others’ confidential events to an admin demoted while streaming', async () => {
    const boss = await ctx.t.createUser('rv-boss', ['admin']);
    const author = await ctx.t.createUser('rv-author');
    const pair = await streams(ctx, boss.access);
    const secret = await emit(ctx, 'rv.secret', author.access, { security_level: 'confidential' });
    await received(pair, secret);

    const res = await ctx.t.request('PATCH', `/api/v1/admin/users/${boss.id}`, {
      token: ctx.admin,
      body: { roles: ['user'] },
    });
    expect(res.statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    const hidden = await emit(ctx, 'rv.secret', author.access, { security_level: 'confidential' });
    const visible = await emit(ctx, 'rv.public', author.access);
    await received(pair, visible);
    expect(pair.sse.events().map((f) => f.id)).toEqual([secret, visible]);
    expect(pair.ws.of('event').map((m) => m.event.event_id)).not.toContain(hidden);
    expect(pair.sse.ended).toBe(false);
  });
});

// A short heartbeat: what changes without any announcement is found by the re-check at each heartbeat.
describe('streams re-check their credentials at each heartbeat', { timeout: 20_000 }, () => {
  const ctx = setUp(1);

  it('ends the streams of an API key once it expires', async () => {
    const u = await ctx.t.createUser('rv-expiring');
    const expiresAt = new Date(Date.now() + 2000).toISOString();
    const key = (
      await ctx.t.request('POST', '/api/v1/auth/api-keys', {
        token: u.access,
        body: { name: 'short', expires_at: expiresAt },
      })
    ).data.data.key as string;
    const pair = await streams(ctx, key);
    const before = await emit(ctx, 'rv.before');
    await received(pair, before);
    await expectRevoked(pair, before, 6000);
  });

  it('keeps a stream open past the expiry of the access token it was opened with', async () => {
    const u = await ctx.t.createUser('rv-long');
    const claims = JSON.parse(Buffer.from(u.access.split('.')[1]!, 'base64url').toString());
    // The same session, but a token that expires two seconds from now.
    const short = await new AccessTokens(JWT_SECRET).sign(claims.sub, claims.sid, ['events:subscribe'], 2);
    const pair = await streams(ctx, short);
    await new Promise((r) => setTimeout(r, 3500));
    expect((await ctx.t.request('GET', '/api/v1/auth/me', { token: short })).statusCode).toBe(401);
    const later = await emit(ctx, 'rv.later');
    await received(pair, later);
    expect(pair.sse.ended).toBe(false);
    expect(pair.ws.closeCode).toBeUndefined();
  });
});
