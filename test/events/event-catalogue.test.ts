import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { MANIFEST, rawTgz, tempRepository, upload, writePlugin } from '../plugins/plugin-fixtures.js';
import { createSubscription } from '../webhooks/webhook-fixtures.js';

const ORDER_SCHEMA = {
  type: 'object',
  required: ['order_id', 'amount'],
  properties: {
    order_id: { type: 'string' },
    amount: { type: 'number', minimum: 0 },
    customer: { type: 'object', properties: { email: { type: 'string', format: 'email' } } },
  },
};

/** A plugin that declares `invoice.paid` with a schema and emits whatever its route is given. */
const INVOICES = `
export default {
  async setup(ctx) {
    await ctx.events.subscribe(['invoice.*'], async () => {}, { name: 'audit' });
    ctx.routes.post('/emit', async (req) => {
      try {
        return await ctx.events.emit(req.body.type, req.body.data ?? {});
      } catch (err) {
        return { refused: err.message, code: err.code ?? null };
      }
    });
  },
};`;

describe('the event catalogue', { timeout: 60_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let user: { id: string; access: string };
  let other: { id: string; access: string };
  const emit = (token: string, event_type: string, data: Record<string, unknown>) =>
    t.request('POST', '/api/v1/events', { token, body: { event_type, data } });
  const putType = (event_type: string, body: Record<string, unknown>, token = admin) =>
    t.request('PUT', `/api/v1/events/types/${event_type}`, { token, body });
  const catalogue = async (token: string) => {
    const res = await t.request('GET', '/api/v1/events/types', { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.data.data as { event_types: any[]; catalogue_strict: boolean };
  };

  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      {
        name: 'invoices',
        permissions: ['events:emit', 'events:subscribe', 'http:routes'],
        events: {
          emits: ['invoice.*'],
          subscribes: ['invoice.*'],
          types: {
            'invoice.paid': {
              description: 'An invoice was paid in full',
              schema: {
                type: 'object',
                required: ['invoice_id', 'total'],
                properties: { invoice_id: { type: 'string' }, total: { type: 'integer' } },
              },
              examples: [{ invoice_id: 'inv_1', total: 1200 }],
            },
          },
        },
      },
      INVOICES,
    );
    t = await startPlatform({ plugins: { repositories: [repo] } });
    admin = await t.adminToken();
    user = await t.createUser('catalogue-user', ['user']);
    other = await t.createUser('catalogue-other', ['user']);
  });
  afterAll(async () => t?.close());

  it('registers a type (201), replaces it (200) and lists it with its schema and examples', async () => {
    const created = await putType('order.placed', {
      description: 'A customer placed an order',
      schema: ORDER_SCHEMA,
      examples: [{ order_id: 'o-1', amount: 10 }],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.data.data.event_type).toMatchObject({
      event_type: 'order.placed',
      registered_by: 'admin',
      updated_by: 'admin',
      schema: ORDER_SCHEMA,
      examples: [{ order_id: 'o-1', amount: 10 }],
    });
    const replaced = await putType('order.placed', { description: 'Placed', schema: ORDER_SCHEMA });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.data.data.event_type.created_at).toBe(created.data.data.event_type.created_at);

    const listed = (await catalogue(user.access)).event_types.find((e) => e.event_type === 'order.placed');
    expect(listed).toMatchObject({ description: 'Placed', schema: ORDER_SCHEMA, examples: [] });
    const one = await t.request('GET', '/api/v1/events/types/order.placed', { token: user.access });
    expect(one.statusCode).toBe(200);
    expect(one.data.data.event_type.event_type).toBe('order.placed');
  });

  it('validates emits of a registered type, naming the field, and stores only the valid ones', async () => {
    await putType('order.placed', { schema: ORDER_SCHEMA });
    const wrong = await emit(user.access, 'order.placed', { order_id: 'o-2', amount: 'ten' });
    expect(wrong.statusCode, wrong.body).toBe(422);
    expect(wrong.data.error.code).toBe('VALIDATION_ERROR');
    expect(wrong.data.error.details).toMatchObject({ field: 'data.amount', reason: 'must be number' });

    const missing = await emit(user.access, 'order.placed', { amount: 3 });
    expect(missing.statusCode).toBe(422);
    expect(missing.data.error.details.field).toBe('data.order_id');

    const nested = await emit(user.access, 'order.placed', {
      order_id: 'o-3',
      amount: 1,
      customer: { email: 'not an address' },
    });
    expect(nested.statusCode).toBe(422);
    expect(nested.data.error.details.field).toBe('data.customer.email');

    const short = await t.request('POST', '/api/v1/events', {
      token: user.access,
      body: { type: 'order.placed', data: { order_id: 'o-4', amount: -1 } },
    });
    expect(short.statusCode).toBe(422);
    expect(short.data.error.details.field).toBe('data.amount');

    const good = await emit(user.access, 'order.placed', { order_id: 'o-5', amount: 12.5 });
    expect(good.statusCode, good.body).toBe(201);
    const stored = await t.request('GET', '/api/v1/events?event_type=order.placed', { token: admin });
    expect(stored.data.data.events.map((e: any) => e.event_id)).toEqual([good.data.data.event.event_id]);

    // Unregistered types work as before.
    expect((await emit(user.access, 'order.unlisted', { anything: true })).statusCode).toBe(201);
  });

  it('refuses schemas that cannot validate, examples that do not match, bad names and non-admins', async () => {
    const typo = await putType('order.typo', { schema: { type: 'object', requird: ['x'] } });
    expect(typo.statusCode).toBe(422);
    expect(typo.data.error.details.field).toBe('schema');
    const notObject = await putType('order.typo', { schema: { type: 'string' } });
    expect(notObject.statusCode).toBe(422);
    expect(notObject.data.error.details.field).toBe('schema');
    const badExample = await putType('order.typo', {
      schema: ORDER_SCHEMA,
      examples: [{ order_id: 'o', amount: -5 }],
    });
    expect(badExample.statusCode).toBe(422);
    expect(badExample.data.error.details.field).toBe('examples.0.amount');
    const pattern = await putType('order.*', { schema: ORDER_SCHEMA });
    expect(pattern.statusCode).toBe(400);
    expect(pattern.data.error.code).toBe('INVALID_EVENT_TYPE');
    const reserved = await putType('security.alert', { schema: ORDER_SCHEMA });
    expect(reserved.statusCode).toBe(422);
    const notAdmin = await putType('order.mine', { schema: ORDER_SCHEMA }, user.access);
    expect(notAdmin.statusCode).toBe(403);
    const listed = await catalogue(admin);
    expect(listed.event_types.map((e) => e.event_type)).not.toContain('order.typo');
  });

  it('lists the subscriptions the caller may see and the plugins that listen to each type', async () => {
    await putType('parcel.shipped', { schema: { type: 'object' } });
    const mine = await createSubscription(t, user.access, {
      name: 'my parcels',
      event_patterns: ['parcel.*'],
      delivery_method: 'webhook',
      webhook_config: { url: 'http://127.0.0.1:9/hook' },
    });
    const theirs = await createSubscription(t, other.access, {
      name: 'their parcels',
      event_patterns: ['parcel.**'],
      delivery_method: 'webhook',
      webhook_config: { url: 'http://127.0.0.1:9/hook' },
    });
    await createSubscription(t, user.access, {
      name: 'orders only',
      event_patterns: ['order.*'],
      delivery_method: 'webhook',
      webhook_config: { url: 'http://127.0.0.1:9/hook' },
    });
    const seenBy = async (token: string) =>
      (await catalogue(token)).event_types.find((e) => e.event_type === 'parcel.shipped').listeners;
    expect((await seenBy(user.access)).subscriptions).toEqual([
      { subscription_id: mine.id, name: 'my parcels', status: 'active' },
    ]);
    expect((await seenBy(admin)).subscriptions.map((s: any) => s.subscription_id).sort()).toEqual(
      [mine.id, theirs.id].sort(),
    );
  });

  it('registers the types a plugin declares while it is installed, and validates its emits and others’', async () => {
    const install = await t.request('POST', '/api/v1/admin/plugins/install', {
      token: admin,
      body: { source: 'repository', plugin_name: 'invoices' },
    });
    expect(install.statusCode, install.body).toBe(201);
    const entry = (await catalogue(user.access)).event_types.find((e) => e.event_type === 'invoice.paid');
    expect(entry).toMatchObject({
      registered_by: 'plugin:invoices',
      description: 'An invoice was paid in full',
      examples: [{ invoice_id: 'inv_1', total: 1200 }],
      listeners: { subscriptions: [], plugins: ['invoices'] },
    });
    // A key without read:plugins is not told which plugins are installed.
    const key = await t.request('POST', '/api/v1/auth/api-keys', {
      token: user.access,
      body: { name: 'events only', scopes: ['events:subscribe'] },
    });
    expect(key.statusCode, key.body).toBe(201);
    const narrowed = await t.request('GET', '/api/v1/events/types/invoice.paid', {
      headers: { 'x-api-key': key.data.data.key },
    });
    expect(narrowed.statusCode, narrowed.body).toBe(200);
    expect(narrowed.data.data.event_type.listeners).toEqual({ subscriptions: [], plugins: [] });

    const viaPlugin = await t.request('POST', '/api/v1/ext/invoices/emit', {
      token: admin,
      body: { type: 'invoice.paid', data: { invoice_id: 'inv_2', total: 'lots' } },
    });
    expect(viaPlugin.data.data.refused).toMatch(/data\.total/);
    const viaApi = await emit(user.access, 'invoice.paid', { invoice_id: 'inv_3' });
    expect(viaApi.statusCode).toBe(422);
    expect(viaApi.data.error.details.field).toBe('data.total');
    expect((await emit(user.access, 'invoice.paid', { invoice_id: 'inv_4', total: 5 })).statusCode).toBe(201);

    const remove = await t.request('DELETE', '/api/v1/events/types/invoice.paid', { token: admin });
    expect(remove.statusCode).toBe(409);
    expect(remove.data.error.code).toBe('RESOURCE_CONFLICT');
    expect((await putType('invoice.paid', { schema: { type: 'object' } })).statusCode).toBe(409);

    const uninstall = await t.request('DELETE', '/api/v1/admin/plugins/invoices', { token: admin });
    expect(uninstall.statusCode, uninstall.body).toBe(200);
    const after = await t.request('GET', '/api/v1/events/types/invoice.paid', { token: admin });
    expect(after.statusCode).toBe(404);
    expect((await emit(user.access, 'invoice.paid', { invoice_id: 'inv_5' })).statusCode).toBe(201);
  });

  it('refuses a plugin whose manifest declares a type it does not emit or a schema that cannot compile', async () => {
    const manifest = MANIFEST('bad-types', {
      events: {
        emits: ['bad.*'],
        types: {
          'other.thing': { schema: { type: 'object' } },
          'bad.schema': { schema: { type: 'object', proprties: {} } },
        },
      },
    });
    const archive = rawTgz([
      { name: 'plugin.json', body: manifest },
      { name: 'index.js', body: 'export default { setup() {} };' },
    ]);
    const install = await upload(t, admin, archive);
    expect(install.statusCode).toBe(422);
    const fields = install.data.error.details.errors.map((e: any) => e.field);
    expect(fields).toEqual(['manifest.events.types.other.thing', 'manifest.events.types.bad.schema.schema']);
  });

  it('removes an administrator’s type: its emits are no longer validated, and a second delete is 404', async () => {
    await putType('order.cancelled', { schema: ORDER_SCHEMA });
    expect((await emit(user.access, 'order.cancelled', {})).statusCode).toBe(422);
    const removed = await t.request('DELETE', '/api/v1/events/types/order.cancelled', { token: admin });
    expect(removed.statusCode, removed.body).toBe(200);
    expect((await emit(user.access, 'order.cancelled', {})).statusCode).toBe(201);
    const again = await t.request('DELETE', '/api/v1/events/types/order.cancelled', { token: admin });
    expect(again.statusCode).toBe(404);
  });
});

describe('a strict event catalogue', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  beforeAll(async () => {
    t = await startPlatform({ events: { catalogue_strict: true } });
    admin = await t.adminToken();
  });
  afterAll(async () => t?.close());

  it('refuses unregistered types with EVENT_TYPE_NOT_REGISTERED and accepts registered ones', async () => {
    const refused = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'shipment.created', data: { id: 1 } },
    });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(refused.data.error.code).toBe('EVENT_TYPE_NOT_REGISTERED');
    expect(refused.data.error.details).toMatchObject({ field: 'event_type', event_type: 'shipment.created' });
    expect(
      (await t.request('GET', '/api/v1/events/types', { token: admin })).data.data.catalogue_strict,
    ).toBe(true);

    const put = await t.request('PUT', '/api/v1/events/types/shipment.created', {
      token: admin,
      body: { schema: { type: 'object', properties: { id: { type: 'integer' } } } },
    });
    expect(put.statusCode, put.body).toBe(201);
    const accepted = await t.request('POST', '/api/v1/events', {
      token: admin,
      body: { event_type: 'shipment.created', data: { id: 1 } },
    });
    expect(accepted.statusCode, accepted.body).toBe(201);
  });

  it('still records the platform’s own events, which are never in the catalogue', async () => {
    await t.createUser('strict-user', ['user']);
    const res = await t.request('GET', '/api/v1/events?event_type=user.created', { token: admin });
    expect(res.data.data.pagination.total).toBeGreaterThan(0);
  });
});
