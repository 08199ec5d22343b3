import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { untilListening } from '../helpers/cluster-sync.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { tempRepository, writePlugin } from '../plugins/plugin-fixtures.js';
import { until } from '../webhooks/webhook-fixtures.js';

/**
 * Two instances on one PostgreSQL database and Redis prefix: a type registered, changed or removed through one
 * is applied by the other's emits, which validate with validators compiled there.
 */
describe('the event catalogue across instances', { timeout: 60_000 }, () => {
  let a: TestPlatform;
  let b: TestPlatform;
  let adminA: string;
  let adminB: string;
  beforeAll(async () => {
    const repo = tempRepository();
    writePlugin(
      repo,
      {
        name: 'tickets',
        permissions: ['events:emit'],
        events: {
          emits: ['ticket.*'],
          types: { 'ticket.opened': { schema: { type: 'object', required: ['ticket_id'] } } },
        },
      },
      'export default { async setup() {} };',
    );
    const config = { plugins: { repositories: [repo] } };
    a = await startPlatform(config);
    b = await startPlatform(config, { storage: a.storage });
    await untilListening(a, b);
    adminA = await a.adminToken();
    adminB = await b.adminToken();
  }, 60_000);
  afterAll(async () => {
    await b?.platform.close();
    await a?.close();
  });

  const emitOnB = (data: Record<string, unknown>) =>
    b.request('POST', '/api/v1/events', { token: adminB, body: { event_type: 'ledger.entry', data } });
  const put = (schema: Record<string, unknown>) =>
    a.request('PUT', '/api/v1/events/types/ledger.entry', { token: adminA, body: { schema } });

  it('validates on B with a schema registered, replaced and removed on A', async () => {
    expect((await emitOnB({ amount: 'x' })).statusCode).toBe(201);

    expect((await put({ type: 'object', properties: { amount: { type: 'number' } } })).statusCode).toBe(201);
    await until(
      async () => (await emitOnB({ amount: 'x' })).statusCode === 422,
      'B to validate the new type',
    );
    const refused = await emitOnB({ amount: 'x' });
    expect(refused.data.error.details.field).toBe('data.amount');
    expect((await emitOnB({ amount: 3 })).statusCode).toBe(201);
    const listed = await b.request('GET', '/api/v1/events/types/ledger.entry', { token: adminB });
    expect(listed.data.data.event_type.registered_by).toBe('admin');

    expect((await put({ type: 'object', properties: { amount: { type: 'string' } } })).statusCode).toBe(200);
    await until(
      async () => (await emitOnB({ amount: 3 })).statusCode === 422,
      'B to use the replaced schema',
    );
    expect((await emitOnB({ amount: 'three' })).statusCode).toBe(201);

    const removed = await a.request('DELETE', '/api/v1/events/types/ledger.entry', { token: adminA });
    expect(removed.statusCode).toBe(200);
    await until(async () => (await emitOnB({ amount: 3 })).statusCode === 201, 'B to drop the type');
  });

  it('validates on B the types of a plugin installed on A, and stops when it is uninstalled there', async () => {
    const ticket = (data: Record<string, unknown>) =>
      b.request('POST', '/api/v1/events', { token: adminB, body: { event_type: 'ticket.opened', data } });
    const install = await a.request('POST', '/api/v1/admin/plugins/install', {
      token: adminA,
      body: { source: 'repository', plugin_name: 'tickets' },
    });
    expect(install.statusCode, install.body).toBe(201);
    await until(async () => (await ticket({})).statusCode === 422, "B to validate the plugin's type");
    expect((await ticket({})).data.error.details.field).toBe('data.ticket_id');
    const listed = await b.request('GET', '/api/v1/events/types/ticket.opened', { token: adminB });
    expect(listed.data.data.event_type.registered_by).toBe('plugin:tickets');

    const uninstall = await a.request('DELETE', '/api/v1/admin/plugins/tickets', { token: adminA });
    expect(uninstall.statusCode, uninstall.body).toBe(200);
    await until(async () => (await ticket({})).statusCode === 201, "B to drop the plugin's type");
  });
});
