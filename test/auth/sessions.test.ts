import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('sessions', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform();
  });
  afterAll(async () => {
    await t.close();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("lists the caller's sessions and marks the current one", async () => {
    const first = await t.createUser('session-lister');
    const second = await t.login('session-lister', 'user-password-1');
    const res = await t.request('GET', '/api/v1/auth/sessions', {
      token: second.access,
      headers: { 'user-agent': 'test-agent/1.0' },
    });
    expect(res.statusCode).toBe(200);
    const sessions = res.data.data.sessions as { id: string; is_current: boolean; is_active: boolean }[];
    expect(sessions).toHaveLength(2);
    expect(sessions.filter((s) => s.is_current)).toHaveLength(1);
    const me = await t.request('GET', '/api/v1/auth/me', { token: second.access });
    expect(sessions.find((s) => s.is_current)?.id).toBe(me.data.data.session_id);
    expect(sessions.every((s) => s.is_active)).toBe(true);
    expect(sessions[0]).toMatchObject({ ip_address: '127.0.0.1' });
    expect((await t.request('GET', '/api/v1/auth/me', { token: first.access })).statusCode).toBe(200);
  });

  it('revokes one session: its access token stops at once, the others keep working', async () => {
    const a = await t.createUser('session-revoker');
    const b = await t.login('session-revoker', 'user-password-1');
    const bId = (await t.request('GET', '/api/v1/auth/me', { token: b.access })).data.data.session_id;
    const res = await t.request('DELETE', `/api/v1/auth/sessions/${bId}`, { token: a.access });
    expect(res.statusCode).toBe(200);
    expect(res.data).toMatchObject({ success: true, message: 'Session revoked' });
    const after = await t.request('GET', '/api/v1/auth/me', { token: b.access });
    expect(after.statusCode).toBe(401);
    expect(after.data.error.details.reason).toBe('session_revoked');
    const refresh = await t.request('POST', '/api/v1/auth/refresh', { body: { refresh_token: b.refresh } });
    expect(refresh.statusCode).toBe(401);
    expect((await t.request('GET', '/api/v1/auth/me', { token: a.access })).statusCode).toBe(200);
    const list = await t.request('GET', '/api/v1/auth/sessions', { token: a.access });
    const revoked = list.data.data.sessions.find((s: { id: string }) => s.id === bId);
    expect(revoked.is_active).toBe(false);
  });

  it('moves last_activity forward as the session is used', async () => {
    const user = await t.createUser('session-active');
    const before = (await t.request('GET', '/api/v1/auth/sessions', { token: user.access })).data.data
      .sessions[0];
    vi.useFakeTimers({ toFake: ['Date'] });
    const later = Date.now() + 5 * 60_000;
    vi.setSystemTime(later);
    expect((await t.request('GET', '/api/v1/auth/me', { token: user.access })).statusCode).toBe(200);
    const moved = await eventually(async () => {
      const res = await t.request('GET', '/api/v1/auth/sessions', { token: user.access });
      return Date.parse(res.data.data.sessions[0].last_activity) >= later;
    });
    expect(moved).toBe(true);
    expect(Date.parse(before.last_activity)).toBeLessThan(later);
  });

  it("answers 404 for someone else's session and leaves it alone", async () => {
    const owner = await t.createUser('session-owner');
    const intruder = await t.createUser('session-intruder');
    const ownerSession = (await t.request('GET', '/api/v1/auth/me', { token: owner.access })).data.data
      .session_id;
    const res = await t.request('DELETE', `/api/v1/auth/sessions/${ownerSession}`, {
      token: intruder.access,
    });
    expect(res.statusCode).toBe(404);
    expect(res.data.error.code).toBe('RESOURCE_NOT_FOUND');
    expect((await t.request('GET', '/api/v1/auth/me', { token: owner.access })).statusCode).toBe(200);
  });

  it('answers 404 for an unknown session id and 422 for a malformed one', async () => {
    const user = await t.createUser('session-prober');
    const unknown = await t.request('DELETE', '/api/v1/auth/sessions/ses_nothing', { token: user.access });
    expect(unknown.statusCode).toBe(404);
    const malformed = await t.request('DELETE', '/api/v1/auth/sessions/%00%27or%201=1', {
      token: user.access,
    });
    expect(malformed.statusCode).toBe(422);
    expect(malformed.data.error.code).toBe('VALIDATION_ERROR');
  });
});
