import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('querying events', { timeout: 20_000 }, () => {
  let t: TestPlatform;
  let token: string;
  const ids: Record<string, string> = {};
  let between: string;

  const emit = async (body: Record<string, unknown>) => {
    const res = await t.request('POST', '/api/v1/events', { token, body });
    expect(res.statusCode).toBe(201);
    return res.data.data.event.event_id as string;
  };

  beforeAll(async () => {
    t = await startPlatform();
    token = (await t.createUser('reader', ['user'])).access;
    ids.login = await emit({ event_type: 'member.login', source: 'web', priority: 3, data: { user: 'ann' } });
    ids.logout = await emit({ event_type: 'member.logout', source: 'web', priority: 5 });
    await new Promise((r) => setTimeout(r, 15));
    between = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 15));
    ids.profile = await emit({
      event_type: 'member.profile.updated',
      source: 'mobile',
      priority: 9,
      metadata: { correlation_id: 'flow-7' },
      data: { long: 'y'.repeat(500), nested: { a: 1 }, list: [1, 2, 3] },
    });
    ids.order = await emit({ event_type: 'order.created', source: 'shop', priority: 5 });
  });
  afterAll(async () => {
    await t.close();
  });

  const list = async (query: string) => {
    const res = await t.request('GET', `/api/v1/events${query}`, { token });
    expect(res.statusCode).toBe(200);
    return res.data.data;
  };
  const typesOf = (data: any) => data.events.map((e: any) => e.event_type);

  it('filters by an exact type, by `*` one segment and by `**` any depth', async () => {
    expect(typesOf(await list('?event_type=member.login'))).toEqual(['member.login']);
    expect(typesOf(await list('?event_type=member.*&order=asc'))).toEqual(['member.login', 'member.logout']);
    expect(typesOf(await list('?event_type=member.**&order=asc'))).toEqual([
      'member.login',
      'member.logout',
      'member.profile.updated',
    ]);
  });

  it('filters by source, priority, correlation id, status and time range, and echoes the filters', async () => {
    expect(typesOf(await list('?source=web&order=asc'))).toEqual(['member.login', 'member.logout']);
    expect(typesOf(await list('?priority=9'))).toEqual(['member.profile.updated']);
    const byCorrelation = await list('?correlation_id=flow-7');
    expect(typesOf(byCorrelation)).toEqual(['member.profile.updated']);
    expect(byCorrelation.filters_applied).toEqual({ correlation_id: 'flow-7' });
    const after = await list(`?start_time=${encodeURIComponent(between)}&source=shop`);
    expect(typesOf(after)).toEqual(['order.created']);
    expect(after.filters_applied).toEqual({ start_time: between, source: 'shop' });
    const before = await list(`?end_time=${encodeURIComponent(between)}&event_type=member.**&order=asc`);
    expect(typesOf(before)).toEqual(['member.login', 'member.logout']);
    expect((await list('?status=processed&event_type=order.created')).events).toHaveLength(1);
  });

  it('sorts by priority and by type, in either order', async () => {
    const byPriority = await list('?sort=priority&order=desc&event_type=member.**');
    expect(byPriority.events.map((e: any) => e.priority)).toEqual([9, 5, 3]);
    const byType = await list('?sort=event_type&order=asc&event_type=member.**');
    expect(typesOf(byType)).toEqual(['member.login', 'member.logout', 'member.profile.updated']);
  });

  it('pages with the pagination object', async () => {
    const first = await list('?event_type=member.**&per_page=2&page=1&order=asc');
    expect(first.events).toHaveLength(2);
    expect(first.pagination).toEqual({
      page: 1,
      per_page: 2,
      total: 3,
      pages: 2,
      has_next: true,
      has_prev: false,
    });
    const second = await list('?event_type=member.**&per_page=2&page=2&order=asc');
    expect(typesOf(second)).toEqual(['member.profile.updated']);
    expect(second.pagination.has_prev).toBe(true);
  });

  it('refuses per_page over 100 and unknown sort keys with 422', async () => {
    for (const q of ['?per_page=101', '?sort=source', '?order=up', '?status=lost', '?colour=red']) {
      const res = await t.request('GET', `/api/v1/events${q}`, { token });
      expect(res.statusCode, q).toBe(422);
      expect(res.data.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('refuses a time range whose start is after its end with 422, as the stats and replay do', async () => {
    const res = await t.request(
      'GET',
      '/api/v1/events?start_time=2026-02-01T00:00:00.000Z&end_time=2026-01-01T00:00:00.000Z',
      { token },
    );
    expect(res.statusCode, res.body).toBe(422);
    expect(res.data.error).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: { field: 'start_time', reason: 'is after end_time' },
    });
    const same = await t.request(
      'GET',
      '/api/v1/events?start_time=2026-01-01T00:00:00.000Z&end_time=2026-01-01T00:00:00.000Z',
      { token },
    );
    expect(same.statusCode, same.body).toBe(200);
  });

  it('refuses a malformed type pattern with 400 INVALID_EVENT_TYPE', async () => {
    const res = await t.request('GET', '/api/v1/events?event_type=member..*', { token });
    expect(res.statusCode).toBe(400);
    expect(res.data.error.code).toBe('INVALID_EVENT_TYPE');
  });

  it('answers a page read again with every change since: new events and expiries', async () => {
    const page = async () =>
      (await list('?source=rereads&order=asc')).events.map((e: any) => [e.event_type, e.status]);
    expect(await page()).toEqual([]);
    const expiresAt = new Date(Date.now() + 1500).toISOString();
    await emit({ event_type: 'reread.brief', source: 'rereads', expires_at: expiresAt });
    expect(await page()).toEqual([['reread.brief', 'processed']]);
    expect(await page()).toEqual([['reread.brief', 'processed']]);
    await emit({ event_type: 'reread.kept', source: 'rereads' });
    expect(await page()).toEqual([
      ['reread.brief', 'processed'],
      ['reread.kept', 'processed'],
    ]);
    // Nothing is written while the first event expires: the page still drops it on time.
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(expiresAt) - Date.now() + 20)));
    expect(await page()).toEqual([['reread.kept', 'processed']]);
    expect((await list('?source=rereads')).pagination).toMatchObject({ total: 1 });
  });

  it('gives list items a shallow data preview instead of data', async () => {
    const [item] = (await list('?correlation_id=flow-7')).events;
    expect(item.data).toBeUndefined();
    expect(item.data_preview.long).toHaveLength(121);
    expect(item.data_preview.nested).toBe('{…}');
    expect(item.data_preview.list).toBe('[3 items]');
    expect(item.metadata).toMatchObject({ correlation_id: 'flow-7' });
    expect(typeof item.metadata.processing_time_ms).toBe('number');
  });
});
