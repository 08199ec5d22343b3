import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteExpiredIdempotencyKeys } from '../../src/http/idempotency-keys-cleanup.js';
import { KyselyIdempotencyStore } from '../../src/storage/idempotency-store.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { startSmtpSink } from '../mail/smtp-sink.js';

describe('Idempotency-Key on creating routes', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };

  beforeAll(async () => {
    t = await startPlatform();
    admin = await t.adminToken();
    ann = await t.createUser('ann', ['user']);
    bob = await t.createUser('bob', ['user']);
  });
  afterAll(async () => {
    await t?.close();
  });

  const emit = (token: string, key: string | undefined, body: Record<string, unknown>) =>
    t.request('POST', '/api/v1/events', {
      token,
      body,
      ...(key === undefined ? {} : { headers: { 'idempotency-key': key } }),
    });
  const stored = async (eventType: string) =>
    t.platform.context.database.db
      .selectFrom('events')
      .select('event_id as id')
      .where('event_type', '=', eventType)
      .execute();

  it('answers a repeated emit with the first answer and its event, marked as replayed', async () => {
    const body = { event_type: 'order.created', source: 'shop', data: { order_id: 1 } };
    const first = await emit(ann.access, 'order-1', body);
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await emit(ann.access, 'order-1', body);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.data.data.event.event_id).toBe(first.data.data.event.event_id);
    expect(again.body).toBe(first.body);
    expect(await stored('order.created')).toEqual([{ id: first.data.data.event.event_id }]);
  });

  it('compares bodies by content, not by the order of their keys', async () => {
    const first = await emit(ann.access, 'order-2', {
      event_type: 'order.keyed',
      source: 's',
      data: { a: 1, b: 2 },
    });
    const again = await emit(ann.access, 'order-2', {
      data: { b: 2, a: 1 },
      source: 's',
      event_type: 'order.keyed',
    });
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.data.data.event.event_id).toBe(first.data.data.event.event_id);
  });

  it('refuses the same key with a different body with 409 IDEMPOTENCY_KEY_REUSED naming the key', async () => {
    const first = await emit(ann.access, 'order-3', { event_type: 'order.reused', data: { n: 1 } });
    expect(first.statusCode).toBe(201);
    const other = await emit(ann.access, 'order-3', { event_type: 'order.reused', data: { n: 2 } });
    expect(other.statusCode).toBe(409);
    expect(other.data.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(other.data.error.details).toMatchObject({ header: 'Idempotency-Key', key: 'order-3' });
    // The same key on another creating route is another request too.
    const elsewhere = await t.request('POST', '/api/v1/events/subscriptions', {
      token: ann.access,
      headers: { 'idempotency-key': 'order-3' },
      body: { event_patterns: ['order.*'], webhook_config: { url: 'https://hooks.example.test/in' } },
    });
    expect(elsewhere.statusCode).toBe(409);
    expect(elsewhere.data.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await stored('order.reused')).toHaveLength(1);
  });

  it('creates one event for 20 concurrent requests with one key, and answers them all alike', async () => {
    const body = { event_type: 'order.concurrent', data: { n: 20 } };
    const answers = await Promise.all(Array.from({ length: 20 }, () => emit(ann.access, 'burst-1', body)));
    for (const a of answers) expect(a.statusCode, a.body).toBe(201);
    const ids = new Set(answers.map((a) => a.data.data.event.event_id));
    expect(ids.size).toBe(1);
    expect(answers.filter((a) => a.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
    expect(await stored('order.concurrent')).toHaveLength(1);
  });

  it("keeps each user's keys apart, and shares them between a user's token and API keys", async () => {
    const body = { event_type: 'order.scoped', data: {} };
    const annFirst = await emit(ann.access, 'shared-name', body);
    const bobFirst = await emit(bob.access, 'shared-name', body);
    expect(bobFirst.statusCode).toBe(201);
    expect(bobFirst.headers['idempotent-replayed']).toBeUndefined();
    expect(bobFirst.data.data.event.event_id).not.toBe(annFirst.data.data.event.event_id);
    const created = await t.request('POST', '/api/v1/auth/api-keys', {
      token: ann.access,
      body: { name: 'producer' },
    });
    expect(created.statusCode).toBe(201);
    const viaKey = await t.request('POST', '/api/v1/events', {
      apiKey: created.data.data.key,
      headers: { 'idempotency-key': 'shared-name' },
      body,
    });
    expect(viaKey.headers['idempotent-replayed']).toBe('true');
    expect(viaKey.data.data.event.event_id).toBe(annFirst.data.data.event.event_id);
    expect(await stored('order.scoped')).toHaveLength(2);
  });

  it('does not keep a refused answer: a retry with the key and a corrected body runs', async () => {
    const bad = await emit(ann.access, 'fix-me', { event_type: 'bad type!', data: {} });
    expect(bad.statusCode).toBe(400);
    expect(bad.data.error.code).toBe('INVALID_EVENT_TYPE');
    const fixed = await emit(ann.access, 'fix-me', { event_type: 'order.fixed', data: {} });
    expect(fixed.statusCode).toBe(201);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(await stored('order.fixed')).toHaveLength(1);
  });

  it('runs a repeat whose first request was held by an instance that died, once its hold has lapsed', async () => {
    // What a dead instance leaves: a claim that never got an answer, its 60 s hold shortened to 1 ms here.
    const store = new KyselyIdempotencyStore(t.platform.context.database.db);
    const claimed = await store.claim({ scope: ann.id, key: 'orphan' }, 'fingerprint-of-the-lost-request', {
      ttlMs: 86_400_000,
      leaseMs: 1,
    });
    expect(claimed.state).toBe('claimed');
    await new Promise((r) => setTimeout(r, 20));
    const res = await emit(ann.access, 'orphan', { event_type: 'order.orphan', data: {} });
    expect(res.statusCode).toBe(201);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    const again = await emit(ann.access, 'orphan', { event_type: 'order.orphan', data: {} });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await stored('order.orphan')).toHaveLength(1);
  });

  it('tells a new key from one taken over: only an earlier holder of the key may have committed under it', async () => {
    // The emit route looks for what an earlier holder committed only for a key taken over (one query less for
    // every new key, the usual case).
    const store = new KyselyIdempotencyStore(t.platform.context.database.db);
    const ref = { scope: bob.id, key: 'taken-over' };
    const first = await store.claim(ref, 'fingerprint', { ttlMs: 86_400_000, leaseMs: 1 });
    expect(first).toMatchObject({ state: 'claimed', takenOver: false });
    await new Promise((r) => setTimeout(r, 20));
    const second = await store.claim(ref, 'fingerprint', { ttlMs: 86_400_000, leaseMs: 60_000 });
    expect(second).toMatchObject({ state: 'claimed', takenOver: true });
    if (second.state === 'claimed') await store.release(second.held);
  });

  it('replays an emit committed by a request that never stored its answer, once its key is taken over', async () => {
    // An emit's key is written with its event, answered: only one whose key was claimed the usual way (here,
    // taken over from a dead instance's claim) stores its answer after the commit, and can lose it.
    const store = new KyselyIdempotencyStore(t.platform.context.database.db);
    await store.claim({ scope: ann.id, key: 'unanswered' }, 'fingerprint-of-the-lost-request', {
      ttlMs: 86_400_000,
      leaseMs: 1,
    });
    await new Promise((r) => setTimeout(r, 20));
    const body = { event_type: 'order.unanswered', data: {} };
    const first = await emit(ann.access, 'unanswered', body);
    expect(first.statusCode).toBe(201);
    // What a process killed between the emit's commit and its stored answer leaves: a claim with no answer,
    // its hold lapsed.
    await t.platform.context.database.db
      .updateTable('idempotency_keys')
      .set({
        status_code: null,
        response_body: null,
        locked_until: new Date(Date.now() - 1000).toISOString(),
      })
      .where('scope', '=', ann.id)
      .where('key', '=', 'unanswered')
      .execute();
    const again = await emit(ann.access, 'unanswered', body);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.data.data.event.event_id).toBe(first.data.data.event.event_id);
    expect(await stored('order.unanswered')).toHaveLength(1);
  });

  it("writes an emit's key in its batch: a key held already refuses that emit alone, the batch is stored", async () => {
    // Held by a subscription's creation: the emit's key row meets it in the batch and fails it; the writer
    // refuses that emit (it settles its key the usual way: another request's key, 409) and writes the rest.
    const hook = { event_patterns: ['held.*'], webhook_config: { url: 'https://hooks.example.test/held' } };
    const created = await t.request('POST', '/api/v1/events/subscriptions', {
      token: ann.access,
      headers: { 'idempotency-key': 'held-elsewhere' },
      body: hook,
    });
    expect(created.statusCode).toBe(201);
    const plain = Array.from({ length: 30 }, (_, i) => ({
      key: undefined,
      body: { event_type: 'held.plain', data: { i } },
    }));
    const keyed = Array.from({ length: 10 }, (_, i) => ({
      key: i === 5 ? 'held-elsewhere' : `held-fresh-${i}`,
      body: { event_type: 'held.keyed', data: { i } },
    }));
    // Interleaved and sent at once, so that they share batches.
    const sent = plain.flatMap((p, i) => (i % 3 === 0 ? [keyed[i / 3]!, p] : [p]));
    const answers = await Promise.all(sent.map((r) => emit(ann.access, r.key, r.body)));
    for (const [i, res] of answers.entries()) {
      if (sent[i]!.key === 'held-elsewhere') {
        expect(res.statusCode, res.body).toBe(409);
        expect(res.data.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
      } else expect(res.statusCode, res.body).toBe(201);
    }
    expect(await stored('held.plain')).toHaveLength(30);
    expect(await stored('held.keyed')).toHaveLength(9);
    // Each fresh key is held by its event, and answers its repeat from it.
    const again = await emit(ann.access, 'held-fresh-3', keyed[3]!.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toBe(answers[sent.indexOf(keyed[3]!)]!.body);
  });

  it('refuses a malformed key with VALIDATION_ERROR naming the header, and emits nothing', async () => {
    for (const key of ['x'.repeat(256), 'tab\there', 'caf\u00e9']) {
      const res = await t.platform.app.inject({
        method: 'POST',
        url: '/api/v1/events',
        headers: { authorization: `Bearer ${ann.access}`, 'idempotency-key': key },
        payload: { event_type: 'order.malformed', data: {} },
      });
      expect(res.statusCode, key).toBe(422);
      expect(res.json().error).toMatchObject({
        code: 'VALIDATION_ERROR',
        details: { field: 'idempotency-key' },
      });
    }
    const empty = await emit(ann.access, '', { event_type: 'order.malformed', data: {} });
    expect(empty.statusCode).toBe(422);
    expect(empty.data.error.details.field).toBe('idempotency-key');
    expect(await stored('order.malformed')).toHaveLength(0);
  });

  it('replays subscription, user and backup creations', async () => {
    const hook = { event_patterns: ['invoice.*'], webhook_config: { url: 'https://hooks.example.test/inv' } };
    const cases: [string, string, unknown, (d: any) => string][] = [
      ['/api/v1/events/subscriptions', ann.access, hook, (d) => d.subscription.subscription_id],
      [
        '/api/v1/webhooks',
        ann.access,
        { url: 'https://hooks.example.test/w', events: ['a.b'] },
        (d) => d.webhook.id,
      ],
      [
        '/api/v1/admin/users',
        admin,
        { username: 'carol', email: 'carol@example.test', password: 'carol-password-1' },
        (d) => d.user.id,
      ],
      [
        '/api/v1/users',
        admin,
        { username: 'dave', email: 'dave@example.test', password: 'dave-password-1' },
        (d) => d.user.id,
      ],
      ['/api/v1/admin/backup', admin, { name: 'nightly', include_plugins: false }, (d) => d.backup.id],
    ];
    let secret = '';
    for (const [url, token, body, idOf] of cases) {
      const headers = { 'idempotency-key': `create-${url}` };
      const first = await t.request('POST', url, { token, headers, body: body as object });
      expect(first.statusCode, `${url}: ${first.body}`).toBe(201);
      secret ||= first.data.data.subscription?.webhook_config?.secret ?? '';
      const again = await t.request('POST', url, { token, headers, body: body as object });
      expect(again.statusCode, `${url}: ${again.body}`).toBe(201);
      expect(again.headers['idempotent-replayed'], url).toBe('true');
      expect(idOf(again.data.data), url).toBe(idOf(first.data.data));
    }
    const subs = await t.request('GET', '/api/v1/events/subscriptions', { token: ann.access });
    expect(subs.data.data.subscriptions.filter((s: any) => s.event_patterns[0] === 'invoice.*')).toHaveLength(
      1,
    );
    // The stored answer of a subscription holds its signing secret: it is kept sealed, never in clear text.
    // (An emit's key stores no answer: its repeat is answered from the event.)
    const rows = await t.platform.context.database.db
      .selectFrom('idempotency_keys')
      .select('response_body')
      .where('response_body', 'is not', null)
      .execute();
    expect(rows.length).toBeGreaterThan(0);
    expect(secret.length).toBeGreaterThan(16);
    for (const r of rows) expect(r.response_body).not.toContain(secret);
  });

  it('declares the header, the replay header and the 409 on the creating routes in the OpenAPI document', async () => {
    const doc = (await t.request('GET', '/openapi.json')).data;
    for (const [path, method] of [
      ['/api/v1/events', 'post'],
      ['/api/v1/events/subscriptions', 'post'],
      ['/api/v1/webhooks', 'post'],
      ['/api/v1/admin/users', 'post'],
      ['/api/v1/users', 'post'],
      ['/api/v1/backup', 'post'],
      ['/api/v1/admin/backup', 'post'],
    ] as const) {
      const op = doc.paths[path][method];
      const header = op.parameters.find((p: any) => p.in === 'header' && /^idempotency-key$/i.test(p.name));
      expect(header, path).toMatchObject({ required: false, schema: { maxLength: 255 } });
      expect(Object.keys(op.responses['201'].headers), path).toContain('Idempotent-Replayed');
      expect(op.responses['409'], path).toBeDefined();
    }
    const list = doc.paths['/api/v1/events'].get;
    expect((list.parameters ?? []).some((p: any) => /^idempotency-key$/i.test(p.name))).toBe(false);
  });
});

describe('Idempotency-Key while the first request runs', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let release: () => void = () => {};
  let held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const smtp = startSmtpSink({ hold: () => held });

  beforeAll(async () => {
    t = await startPlatform({
      mail: { smtp_url: (await smtp).url, timeout_seconds: 30 },
      server: { idempotency_ttl_seconds: 3 },
    });
    admin = await t.adminToken();
  });
  afterAll(async () => {
    release();
    await t?.close();
    await (await smtp).close();
  });

  const createErin = () =>
    t.request('POST', '/api/v1/admin/users', {
      token: admin,
      headers: { 'idempotency-key': 'erin' },
      body: {
        username: 'erin',
        email: 'erin@example.test',
        password: 'erin-password-1',
        send_welcome_email: true,
      },
    });

  it('makes a repeat wait for the running first request, then answer 409 IDEMPOTENCY_KEY_IN_PROGRESS', async () => {
    // The first creation hangs on the slow mail relay until released.
    const first = createErin();
    await (await smtp).waitFor('erin@example.test', 20_000);
    const started = Date.now();
    const repeat = await createErin();
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_500);
    expect(repeat.statusCode).toBe(409);
    expect(repeat.data.error).toMatchObject({
      code: 'IDEMPOTENCY_KEY_IN_PROGRESS',
      details: { key: 'erin' },
    });
    // A repeat that comes while the first runs gets its answer as soon as it is there.
    const waiting = createErin();
    await new Promise((r) => setTimeout(r, 300));
    release();
    const [answer, replay] = await Promise.all([first, waiting]);
    expect(answer.statusCode).toBe(201);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.data.data.user.id).toBe(answer.data.data.user.id);
  });

  it('forgets a key after server.idempotency_ttl_seconds, and the cleanup deletes it', async () => {
    held = Promise.resolve();
    const body = { event_type: 'order.expiring', data: {} };
    const headers = { 'idempotency-key': 'short-lived' };
    const first = await t.request('POST', '/api/v1/events', { token: admin, headers, body });
    const soon = await t.request('POST', '/api/v1/events', { token: admin, headers, body });
    expect(soon.data.data.event.event_id).toBe(first.data.data.event.event_id);
    await new Promise((r) => setTimeout(r, 3_300));
    const db = t.platform.context.database.db;
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('idempotency_keys')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirst()
        )?.n,
      );
    expect(await count()).toBeGreaterThan(0);
    expect(await deleteExpiredIdempotencyKeys(new KyselyIdempotencyStore(db))).toBeGreaterThan(0);
    expect(await count()).toBe(0);
    const later = await t.request('POST', '/api/v1/events', { token: admin, headers, body });
    expect(later.statusCode).toBe(201);
    expect(later.headers['idempotent-replayed']).toBeUndefined();
    expect(later.data.data.event.event_id).not.toBe(first.data.data.event.event_id);
    const job = t.platform.context.scheduler.list().find((j) => j.name === 'idempotency_keys_cleanup');
    expect(job?.cron).toBe('*/10 * * * *');
  });
});
