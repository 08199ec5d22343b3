/**
 * Captures the examples of the OpenAPI document from a running platform and writes
 * src/http/openapi-examples.json (operationId → `request`, the body sent, and status → the body answered),
 * which src/http/openapi.ts merges into the document. The platform runs in this process on a throw-away
 * SQLite folder, with a webhook receiver and an example plugin (`notes`) on 127.0.0.1. One realistic call is
 * made per operation (two where an operation has two success statuses), then the errors that can be provoked
 * on purpose: 404 with an unknown id, 422 with an input the schema refuses, and a few domain errors. Tokens,
 * keys, secrets and checksums are replaced by obvious placeholders, and the machine's paths, host name and
 * webhook receiver by neutral ones. Fails when a success status of some operation got no example.
 *
 * Usage: npm run openapi:examples
 */
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Parser } from 'tar';
import { loadBootConfig } from '../src/config/load-config.js';
import { compilePathTemplates } from '../src/http/openapi-path-templates.js';
import { newId } from '../src/kernel/new-id.js';
import { packFolder } from '../src/plugins/plugin-pack.js';
import { createPlatform, type Platform } from '../src/server.js';
import { PROJECT_ROOT } from '../src/system/platform-info.js';

const OUTPUT = join(PROJECT_ROOT, 'src', 'http', 'openapi-examples.json');
const ADMIN_PASSWORD = 'correct horse battery';
const CLIENT_IP = '203.0.113.24';
const BROWSER =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36';
const DEADLINE_MS = 60_000;

interface Parameter {
  in?: string;
  name?: string;
  schema?: { maxLength?: number; type?: string; format?: string };
}
interface Operation {
  operationId?: string;
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { example?: unknown }> };
  responses?: Record<string, unknown>;
}
type Doc = { paths: Record<string, Record<string, Operation>> };
interface Reply {
  status: number;
  text: string;
  json: unknown;
  raw: Buffer;
}
interface CallOptions {
  /** The caller's access token: the recorder's admin token by default, none when null. */
  token?: string | null;
  headers?: Record<string, string>;
  /** The client address (each address has its own login rate limit). */
  ip?: string;
}
type Entry = Record<string, unknown>;
type Task = { status: string; error: string | null };

/** The `data` of a success envelope, typed by the caller for the fields it reads. */
const dataOf = <T>(reply: Reply): T => (reply.json as { data: T }).data;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Every secret value seen, with its stand-in; swapped in all captured text when the file is written. */
class Placeholders {
  readonly swaps = new Map<string, string>();
  private readonly counts = new Map<string, number>();

  /** Notes the secrets in a captured body: tokens, API keys, signing secrets, checksums. */
  note(value: unknown, key = ''): void {
    if (Array.isArray(value)) for (const item of value) this.note(item, key);
    else if (value && typeof value === 'object')
      for (const [k, v] of Object.entries(value as Entry)) this.note(v, k);
    else if (typeof value === 'string') this.noteString(value, key);
  }

  private noteString(value: string, key: string): void {
    if (/^eyJ[\w-]+\.[\w-]+\.[\w-]+$/.test(value) || key === 'access_token')
      this.add(
        'jwt',
        value,
        (n) => `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleGFtcGxlIjp0cnVlfQ.EXAMPLE-access-token-${n}`,
      );
    else if (key === 'refresh_token') this.add('refresh', value, (n) => `EXAMPLE-refresh-token-${n}`);
    else if (key === 'key' && value.startsWith('plat_')) {
      const fake = this.add(
        'key',
        value,
        (n) => `plat_EXAMPLE${String(n).padStart(4, '0')}notARealKey0000000000000000`,
      );
      // The key's preview shows its last four characters.
      if (fake) this.swaps.set(`plat_…${value.slice(-4)}`, `plat_…${fake.slice(-4)}`);
    } else if (['secret', 'jwt_secret', 'encryption_key', 'token'].includes(key))
      this.add('secret', value, (n) => `EXAMPLE-secret-${n}`);
    else if (key === 'sha256')
      this.add('sha256', value, (n) => `${'deadbeef'.repeat(7)}${String(n).padStart(8, '0')}`);
  }

  private add(kind: string, value: string, make: (n: number) => string): string | undefined {
    if (!value || this.swaps.has(value) || /^\*+$/.test(value)) return undefined;
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    this.swaps.set(value, make(n));
    return make(n);
  }
}

/** Makes the calls and keeps the first example of each operation and status. */
class Recorder {
  readonly examples = new Map<string, Entry>();
  readonly secrets = new Placeholders();
  /** The administrator's access token, sent unless a call names another. */
  token = '';
  private readonly find: (method: string, url: string) => Operation | undefined;

  constructor(
    readonly platform: Platform,
    readonly doc: Doc,
    readonly hooks: string,
  ) {
    this.find = matcher(doc);
  }

  async send(method: string, url: string, body?: unknown, o: CallOptions = {}): Promise<Reply> {
    const token = o.token === undefined ? this.token : o.token;
    const res = await this.platform.app.inject({
      method: method as 'GET',
      url,
      remoteAddress: o.ip ?? CLIENT_IP,
      headers: {
        'user-agent': BROWSER,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...o.headers,
      },
      ...(body === undefined ? {} : { payload: body as object }),
    });
    let json: unknown;
    try {
      json = JSON.parse(res.body);
    } catch {
      json = undefined;
    }
    return { status: res.statusCode, text: res.body, json, raw: res.rawPayload };
  }

  /** A call that must succeed, not recorded. */
  async call(method: string, url: string, body?: unknown, o: CallOptions = {}): Promise<Reply> {
    const res = await this.send(method, url, body, o);
    if (res.status < 200 || res.status > 299)
      throw new Error(`${method} ${url} answered ${res.status}: ${res.text.slice(0, 500)}`);
    return res;
  }

  /** A call that must succeed, recorded; resolves to the envelope's data. */
  async capture<T = unknown>(method: string, url: string, body?: unknown, o: CallOptions = {}): Promise<T> {
    const res = await this.call(method, url, body, o);
    this.record(method, url, res.status, res.json ?? res.text, body);
    return dataOf<T>(res);
  }

  /** A call that must fail with `status`, recorded as that status's example. */
  async refused(
    status: number,
    method: string,
    url: string,
    body?: unknown,
    o: CallOptions = {},
  ): Promise<void> {
    const res = await this.send(method, url, body, o);
    if (res.status !== status)
      throw new Error(`${method} ${url} answered ${res.status}, not ${status}: ${res.text}`);
    this.record(method, url, status, res.json, undefined);
  }

  /** Keeps `answer` (and, for a success, the body `sent`) under the operation serving `method url`. */
  record(method: string, url: string, status: number, answer: unknown, sent: unknown, form?: Entry): void {
    const op = this.find(method, url);
    if (!op?.operationId) throw new Error(`${method} ${url} is not an operation of the document`);
    const key = [String(status), `${String(status)[0]}XX`].find((k) => op.responses?.[k]);
    if (!key) throw new Error(`${method} ${url} answered ${status}, which the document does not list`);
    const entry = this.examples.get(op.operationId) ?? {};
    entry[key] ??= answer;
    if (op.requestBody && sent !== undefined && status < 300) entry['request'] ??= sent;
    if (form) entry['request multipart/form-data'] ??= form;
    this.examples.set(op.operationId, entry);
    // What was sent first, so placeholders are numbered in the order the values were made.
    this.secrets.note(form ?? sent);
    this.secrets.note(answer);
  }

  /** Polls `probe` until it returns a value (bounded), for work that finishes in the background. */
  async until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
    const end = Date.now() + DEADLINE_MS;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await sleep(100);
    }
  }

  /** Waits for a task to end; a restore ends the admin's session, so a refused token logs in again. */
  settled(taskId: string): Promise<Task> {
    return this.until(`task ${taskId}`, async () => {
      const res = await this.send('GET', `/api/v1/tasks/${taskId}`);
      if (res.status === 401) return void (await this.login('203.0.113.80'));
      const task = dataOf<Task>(res);
      if (task.status === 'running') return undefined;
      if (task.status !== 'completed') throw new Error(`task ${taskId} ended ${task.status}: ${task.error}`);
      return task;
    });
  }

  async login(ip = CLIENT_IP): Promise<void> {
    const body = { username: 'admin', password: ADMIN_PASSWORD };
    this.token = dataOf<{ access_token: string }>(
      await this.call('POST', '/api/v1/auth/login', body, { ip }),
    ).access_token;
  }
}

async function main(root: string): Promise<void> {
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}'));
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const port = (receiver.address() as { port: number }).port;
  writeExamplePlugin(join(root, 'plugin-repository'));
  const platform = await createPlatform({
    boot: loadBootConfig({
      env: { PLATFORM_ADMIN_PASSWORD: ADMIN_PASSWORD },
      cwd: root,
      overrides: {
        server: { host: '127.0.0.1', port: 0 },
        storage: { data_dir: join(root, 'data') },
        database: { url: '' },
        redis: { url: '' },
        plugins: { repositories: ['./plugins', join(root, 'plugin-repository')] },
        webhooks: { allow_private_targets: true },
      },
    }),
    print: () => {},
    logStream: { write: () => {} },
  });
  const x = new Recorder(platform, platform.app.swagger() as unknown as Doc, `http://127.0.0.1:${port}`);
  try {
    await authAndUsers(x);
    await configuration(x);
    await events(x);
    await plugins(x, root);
    await security(x);
    await backupsAndRestores(x);
    await provokeErrors(x);
  } finally {
    await platform.close();
    receiver.close();
  }
  write(x, root);
}

async function authAndUsers(x: Recorder): Promise<void> {
  await x.capture('GET', '/api/v1/health');
  await x.capture('GET', '/api/v1/ready');
  await x.refused(401, 'POST', '/api/v1/auth/login', { username: 'admin', password: 'not the password' });
  const admin = await x.capture<{ access_token: string; user: { id: string } }>(
    'POST',
    '/api/v1/auth/login',
    {
      username: 'admin',
      password: ADMIN_PASSWORD,
    },
  );
  x.token = admin.access_token;
  await x.capture('GET', '/api/v1/status');

  type UserData = { user: { id: string } };
  const jdoe = await x.capture<UserData>('POST', '/api/v1/admin/users', {
    username: 'jdoe',
    email: 'jdoe@example.com',
    password: 'a long passphrase',
    full_name: 'Jane Doe',
    roles: ['user'],
    send_welcome_email: true,
    force_password_change: false,
  });
  await x.refused(409, 'POST', '/api/v1/admin/users', {
    username: 'jdoe',
    email: 'jane.doe@example.com',
    password: 'another passphrase',
  });
  const sam = await x.capture<UserData>('POST', '/api/v1/users', {
    username: 'sam.lee',
    email: 'sam.lee@example.com',
    password: 'sam passphrase 2026',
    full_name: 'Sam Lee',
    roles: ['user'],
    send_welcome_email: false,
  });
  await x.refused(409, 'POST', '/api/v1/users', {
    username: 'sam.lee',
    email: 'sam@example.com',
    password: 'sam passphrase 2026',
  });
  // A new administrator raises the security alert the alert examples show.
  await x.call('POST', '/api/v1/admin/users', {
    username: 'ops.admin',
    email: 'ops@example.com',
    password: 'operations passphrase',
    full_name: 'Olga Petrova',
    roles: ['admin'],
  });
  const made = async (url: string, username: string) =>
    dataOf<UserData>(
      await x.call('POST', url, {
        username,
        email: `${username}@example.com`,
        password: 'a fine passphrase',
      }),
    ).user.id;
  const leaver = await made('/api/v1/admin/users', 'former.employee');
  const contractor = await made('/api/v1/users', 'contractor');

  // Jane's sessions: one from the command line, one from a browser (refreshed), one spare.
  type Tokens = { access_token: string; refresh_token: string };
  const jane = { username: 'jdoe', password: 'a long passphrase' };
  const session = async (agent = BROWSER) =>
    dataOf<Tokens>(
      await x.call('POST', '/api/v1/auth/login', jane, { token: null, headers: { 'user-agent': agent } }),
    );
  await session('platform-cli/0.1.0');
  const web = await session();
  const refresh = (token: string) => ({ refresh_token: token });
  const refreshed = await x.capture<Tokens>('POST', '/api/v1/auth/refresh', refresh(web.refresh_token), {
    token: null,
  });
  // A refresh token used twice is refused and ends its session (reuse detection): shown on the spare one.
  const spare = await session();
  await x.call('POST', '/api/v1/auth/refresh', refresh(spare.refresh_token), { token: null });
  await x.refused(401, 'POST', '/api/v1/auth/refresh', refresh(spare.refresh_token), { token: null });
  const as = { token: refreshed.access_token };
  await x.capture('GET', '/api/v1/auth/me', undefined, as);
  type Sessions = { sessions: { id: string; is_current: boolean; is_active: boolean }[] };
  const { sessions } = await x.capture<Sessions>('GET', '/api/v1/auth/sessions', undefined, as);
  const other = sessions.find((s) => !s.is_current && s.is_active)!;
  await x.capture('DELETE', `/api/v1/auth/sessions/${other.id}`, undefined, as);
  const change = { current_password: 'not my passphrase', new_password: 'an even longer passphrase' };
  await x.refused(401, 'POST', '/api/v1/auth/change-password', change, as);
  await x.capture('POST', '/api/v1/auth/change-password', { ...change, current_password: jane.password }, as);

  const id = jdoe.user.id;
  await x.capture('GET', '/api/v1/admin/users?per_page=3&sort=created_at&order=desc');
  await x.capture('GET', `/api/v1/admin/users/${id}`);
  await x.capture('PUT', `/api/v1/admin/users/${id}`, {
    full_name: 'Jane Q. Doe',
    roles: ['user', 'moderator'],
    status: 'active',
  });
  await x.capture('PATCH', `/api/v1/admin/users/${id}`, {
    profile: { location: 'Lisbon, Portugal', bio: 'Support team lead' },
  });
  await x.capture('POST', `/api/v1/admin/users/${contractor}/suspend`, {
    reason: 'Terms of service violation',
    duration_days: 7,
    notify_user: true,
  });
  await x.capture('POST', `/api/v1/admin/users/${sam.user.id}/reset-password`, {
    temporary_password: 'TempPass-2026!',
    force_change_on_login: true,
    send_email: true,
  });
  await x.capture('GET', '/api/v1/users?per_page=3&role=user');
  await x.capture('GET', `/api/v1/users/${sam.user.id}`);
  await x.capture('PUT', `/api/v1/users/${sam.user.id}`, {
    full_name: 'Samuel Lee',
    preferences: { theme: 'dark', language: 'en', notifications: true },
  });
  await x.capture('PATCH', `/api/v1/users/${sam.user.id}`, { email_verified: true });
  await x.capture('GET', '/api/v1/admin/analytics/users?period=30d&group_by=week');
  await x.capture('DELETE', `/api/v1/users/${contractor}`);
  await x.capture('DELETE', `/api/v1/admin/users/${leaver}`);
  // What an administrator may not do to their own account; the resource API refuses self-service changes.
  const self = admin.user.id;
  for (const url of [`/api/v1/admin/users/${self}`, `/api/v1/users/${self}`]) {
    const status = url.includes('/admin/') ? 409 : 403;
    await x.refused(status, 'PUT', url, { status: 'inactive' });
    await x.refused(status, 'PATCH', url, { status: 'inactive' });
    await x.refused(409, 'DELETE', url);
  }
  await x.refused(409, 'POST', `/api/v1/admin/users/${self}/suspend`, { reason: 'Testing' });

  await x.capture('POST', '/api/v1/auth/api-keys', {
    name: 'ci-deployer',
    scopes: ['read:system', 'events:emit'],
    expires_at: new Date(Date.now() + 90 * 86_400_000).toISOString(),
  });
  const grafana = dataOf<{ api_key: { id: string } }>(
    await x.call('POST', '/api/v1/auth/api-keys', { name: 'grafana-metrics', scopes: ['read:metrics'] }),
  );
  await x.capture('GET', '/api/v1/auth/api-keys');
  await x.capture('DELETE', `/api/v1/auth/api-keys/${grafana.api_key.id}`);
}

async function configuration(x: Recorder): Promise<void> {
  await x.capture('POST', '/api/v1/admin/system/maintenance', {
    enabled: true,
    message: 'Database upgrade in progress',
    estimated_duration_minutes: 30,
    allow_admin_access: true,
  });
  await x.capture('GET', '/api/v1/admin/system/maintenance');
  await x.call('POST', '/api/v1/admin/system/maintenance', { enabled: false });
  await x.capture('GET', '/api/v1/config');
  await x.capture('GET', '/api/v1/admin/config?section=rate_limits');
  await x.capture('PUT', '/api/v1/config', { rate_limits: { authenticated: { max: 2000 } } });
  await x.capture('PATCH', '/api/v1/config', { events: { retention_days: 14 } });
  await x.capture('PUT', '/api/v1/admin/config', { logging: { level: 'debug' } });
  await x.capture('PATCH', '/api/v1/admin/config', { logging: { level: 'info' } });
  for (const url of ['/api/v1/config', '/api/v1/admin/config'])
    for (const method of ['PUT', 'PATCH'])
      await x.refused(400, method, url, { server: { request_timeout_seconds: 'thirty' } });
  await x.capture('POST', '/api/v1/admin/config/reload');
  await x.capture('GET', '/api/v1/cache/status');
  await x.capture('DELETE', '/api/v1/cache', { pattern: 'api_responses:*', level: 'all' });
  await x.capture('POST', '/api/v1/admin/system/clear-cache', {
    cache_types: ['api_responses', 'user_sessions'],
    pattern: '*',
  });
}

async function events(x: Recorder): Promise<void> {
  // A subscription and a webhook first, so the events have somewhere to go.
  const { subscription } = await x.capture<{ subscription: { subscription_id: string } }>(
    'POST',
    '/api/v1/events/subscriptions',
    {
      name: 'order-fulfilment',
      event_patterns: ['order.*'],
      filters: { priority: { min: 3 } },
      delivery_method: 'webhook',
      webhook_config: {
        url: `${x.hooks}/hooks/orders`,
        secret: 'EXAMPLE-secret-signing',
        retry_policy: { max_attempts: 5, retry_delay_seconds: 30, exponential_backoff: true },
        timeout_seconds: 10,
      },
    },
  );
  const sub = `/api/v1/events/subscriptions/${subscription.subscription_id}`;
  const { webhook } = await x.capture<{ webhook: { id: string } }>('POST', '/api/v1/webhooks', {
    url: `${x.hooks}/hooks/audit`,
    events: ['user.*', 'security.**'],
    name: 'security-audit',
  });
  // The event catalogue: order.created gets a schema, so every order emitted below is validated against it.
  const orderSchema = {
    type: 'object',
    required: ['order_id', 'customer_id', 'total'],
    properties: {
      order_id: { type: 'string', pattern: '^ord_' },
      customer_id: { type: 'string' },
      total: { type: 'number', minimum: 0 },
      currency: { type: 'string', enum: ['EUR', 'USD', 'GBP'] },
    },
  };
  const orderType = '/api/v1/events/types/order.created';
  const orderExample = { order_id: 'ord_10452', customer_id: 'cus_2231', total: 149.9, currency: 'EUR' };
  await x.capture('PUT', orderType, { description: 'An order was placed', schema: orderSchema });
  await x.capture('PUT', orderType, {
    description: 'A customer placed an order at checkout',
    schema: orderSchema,
    examples: [orderExample],
  });
  await x.refused(400, 'PUT', '/api/v1/events/types/order.*', { schema: orderSchema });
  await x.capture('PUT', '/api/v1/events/types/cart.abandoned', { schema: { type: 'object' } });
  await x.capture('DELETE', '/api/v1/events/types/cart.abandoned');
  await x.capture('GET', '/api/v1/events/types');
  await x.capture('GET', orderType);
  const order = (id: string, customer: string, total: number) => ({
    event_type: 'order.created',
    source: 'shop-backend',
    data: { order_id: id, customer_id: customer, total, currency: 'EUR' },
    priority: 5,
  });
  const { event } = await x.capture<{ event: { event_id: string } }>('POST', '/api/v1/events', {
    ...order('ord_10452', 'cus_2231', 149.9),
    metadata: { correlation_id: 'checkout-7f3a9c' },
  });
  await x.call('POST', '/api/v1/events', {
    event_type: 'order.shipped',
    source: 'warehouse',
    data: { order_id: 'ord_10452', carrier: 'DHL', tracking: 'JD014600006183' },
    metadata: { correlation_id: 'checkout-7f3a9c' },
    priority: 4,
  });
  await x.call('POST', '/api/v1/events', order('ord_10453', 'cus_0918', 32.5));
  await x.refused(400, 'POST', '/api/v1/events', { event_type: 'order created!', data: {} });
  await x.refused(410, 'POST', '/api/v1/events', {
    event_type: 'order.reminder',
    data: {},
    expires_at: '2026-01-01T00:00:00.000Z',
  });
  const soon = {
    event_type: 'cart.reminder',
    data: {},
    expires_at: new Date(Date.now() + 1000).toISOString(),
  };
  const expiring = dataOf<{ event: { event_id: string } }>(
    await x.call('POST', '/api/v1/events', soon),
  ).event;
  const url = `/api/v1/events/${event.event_id}`;
  type Delivered = { event: { delivery_info: { successful_deliveries: number } } };
  await x.until('the webhook delivery', async () => {
    const e = dataOf<Delivered>(await x.call('GET', url)).event;
    return e.delivery_info.successful_deliveries > 0 ? e : undefined;
  });
  await x.capture('GET', url);
  await x.capture('GET', `${url}/audit`);
  await sleep(Math.max(0, Date.parse(soon.expires_at) - Date.now() + 50));
  await x.refused(410, 'GET', `/api/v1/events/${expiring.event_id}`);
  await x.capture('GET', '/api/v1/events?event_type=order.*&per_page=2&sort=timestamp&order=desc');
  await x.capture('GET', '/api/v1/events/stats?group_by=event_type');
  await x.capture('GET', '/api/v1/events/health');
  await x.capture('GET', '/api/v1/events/subscriptions?status=active');
  await x.capture('GET', sub);
  await x.capture('GET', `${sub}/deliveries?per_page=2`);
  await x.capture('GET', `${sub}/delivery-timeline?resolution=15m`);
  await x.capture('PUT', sub, {
    name: 'order-fulfilment',
    event_patterns: ['order.*', 'payment.captured'],
    batch_config: { enabled: true, max_batch_size: 50, max_wait_time_seconds: 5 },
  });
  await x.capture('PATCH', sub, { enabled: false });
  await x.call('PATCH', sub, { enabled: true });
  await x.capture('POST', `${sub}/secret/rotate`, { secret: 'EXAMPLE-rotated-signing', overlap_hours: 24 });
  const [settled] = dataOf<{ deliveries: { delivery_id: string }[] }>(
    await x.call('GET', `${sub}/deliveries?status=delivered&per_page=1`),
  ).deliveries;
  await x.capture('GET', `${sub}/deliveries/${settled!.delivery_id}/attempts`);
  await x.capture('POST', `${sub}/deliveries/${settled!.delivery_id}/resend`);
  await x.capture('POST', `${sub}/recover`, { since: new Date(Date.now() - 3_600_000).toISOString() });
  await x.capture('GET', '/api/v1/webhooks');
  await captureStream(x, event.event_id);
  await x.refused(404, 'GET', `/api/v1/events/stream?last_event_id=${newId('evt')}`);

  type Started = { task_id: string; replay_id: string; purge_id: string };
  const replay = await x.capture<Started>('POST', '/api/v1/events/replay', {
    event_filter: { event_types: ['order.created'], correlation_id: 'checkout-7f3a9c' },
    target_subscribers: [subscription.subscription_id],
    replay_mode: 'sequential',
    delay_between_events_ms: 100,
  });
  await x.refused(404, 'POST', '/api/v1/events/replay', {
    event_filter: { event_types: ['order.created'] },
    target_subscribers: [newId('sub')],
  });
  await x.settled(replay.task_id);
  await x.capture('GET', `/api/v1/events/replay/${replay.replay_id}`);
  const purge = await x.capture<Started>('POST', '/api/v1/events/purge', {
    criteria: { older_than_days: 30, event_types: ['order.*'] },
    dry_run: true,
    batch_size: 500,
  });
  await x.settled(purge.task_id);
  await x.capture('GET', `/api/v1/events/purge/${purge.purge_id}`);
  // A slow replay is the task there is to cancel.
  const slow = dataOf<Started>(
    await x.call('POST', '/api/v1/events/replay', {
      event_filter: { event_types: ['order.*'] },
      replay_mode: 'sequential',
      delay_between_events_ms: 5000,
    }),
  );
  await x.capture('DELETE', `/api/v1/tasks/${slow.task_id}`);
  await x.refused(409, 'DELETE', `/api/v1/tasks/${slow.task_id}`);
  await x.capture('GET', `/api/v1/tasks/${replay.task_id}`);
  await x.capture('GET', '/api/v1/tasks?per_page=2');
  await x.capture('DELETE', `/api/v1/webhooks/${webhook.id}`);
  await x.capture('DELETE', sub);
}

/** The bundled plugins, and `notes`, an example plugin with routes of every method, in four versions. */
async function plugins(x: Recorder, root: string): Promise<void> {
  await x.capture('GET', '/api/v1/admin/plugins/available');
  await x.capture('POST', '/api/v1/admin/plugins/install', {
    source: 'repository',
    plugin_name: 'audit-forwarder',
    version: '1.0.0',
    config: { path: 'audit-events.jsonl', patterns: ['user.**', 'security.**'] },
    enabled: true,
  });
  await x.refused(409, 'POST', '/api/v1/admin/plugins/install', {
    source: 'repository',
    plugin_name: 'audit-forwarder',
    version: '1.0.0',
  });
  await x.refused(404, 'POST', '/api/v1/admin/plugins/install', {
    source: 'repository',
    plugin_name: 'inventory-sync',
    version: '2.1.0',
  });
  await x.refused(404, 'POST', '/api/v1/plugins', {
    name: 'inventory-sync',
    version: '2.1.0',
    enabled: true,
  });
  const jobs = (cron: string) => ({
    jobs: [{ name: 'nightly-report', cron, event_type: 'report.requested', data: { report: 'sales' } }],
  });
  await x.capture('POST', '/api/v1/plugins', {
    name: 'scheduler',
    version: '1.0.0',
    description: 'Nightly sales report',
    config: jobs('0 2 * * *'),
    enabled: true,
  });
  await x.refused(409, 'POST', '/api/v1/plugins', { name: 'scheduler', version: '1.0.0', enabled: true });
  await uploadPlugin(x, join(root, 'plugin-repository', 'notes-1.0.0'));
  await x.capture('GET', '/api/v1/ext/scheduler/jobs');
  const { note } = await x.capture<{ note: { id: string } }>('POST', '/api/v1/ext/notes/notes', {
    title: 'On-call handover',
    body: 'Disk alerts on db-2 are expected during the backup window.',
  });
  const url = `/api/v1/ext/notes/notes/${note.id}`;
  await x.capture('PUT', url, {
    title: 'On-call handover',
    body: 'Disk alerts on db-2 are expected until 03:00.',
  });
  await x.capture('PATCH', url, { pinned: true });
  await x.capture('DELETE', url);
  await x.capture('GET', '/api/v1/admin/plugins');
  await x.capture('GET', '/api/v1/plugins');
  await x.capture('GET', '/api/v1/admin/plugins/scheduler');
  await x.capture('GET', '/api/v1/plugins/audit-forwarder');
  await x.capture('POST', '/api/v1/admin/plugins/scheduler/disable');
  await x.capture('POST', '/api/v1/admin/plugins/scheduler/enable');
  await x.capture('PUT', '/api/v1/plugins/scheduler', { config: jobs('0 3 * * *') });
  await x.capture('PATCH', '/api/v1/plugins/audit-forwarder', { enabled: false });
  const update = await x.capture<{ task: { id: string } }>('POST', '/api/v1/admin/plugins/notes/update', {
    version: '1.1.0',
    backup_current: true,
    restart_after_update: true,
  });
  await x.settled(update.task.id);
  for (const [method, version] of [
    ['PUT', '1.2.0'],
    ['PATCH', '1.2.1'],
  ] as const) {
    const started = await x.capture<{ task: { id: string } }>(method, '/api/v1/plugins/notes', { version });
    await x.settled(started.task.id);
  }
  await x.capture('DELETE', '/api/v1/plugins/scheduler');
  await x.capture('DELETE', '/api/v1/admin/plugins/audit-forwarder');
}

async function security(x: Recorder): Promise<void> {
  type Alerts = { alerts: { id: string }[] };
  await x.until('the new-admin alert', async () => {
    const { alerts } = dataOf<Alerts>(await x.call('GET', '/api/v1/admin/security/alerts?status=open'));
    return alerts.length > 0 ? alerts : undefined;
  });
  const { alerts } = await x.capture<Alerts>('GET', '/api/v1/admin/security/alerts?status=open&per_page=2');
  const alert = `/api/v1/admin/security/alerts/${alerts[0]!.id}`;
  await x.capture('GET', alert);
  await x.capture('PATCH', alert, {
    status: 'acknowledged',
    note: 'Expected: ops.admin joined the operations team',
  });
  await x.refused(409, 'PATCH', alert, { status: 'acknowledged' });
  const scan = await x.capture<{ scan_id: string }>('POST', '/api/v1/security/scan', {
    type: 'full',
    components: ['plugins', 'configuration', 'permissions'],
    severity_threshold: 'medium',
  });
  const scanUrl = `/api/v1/security/scan/${scan.scan_id}`;
  await x.until('the security scan', async () => {
    const s = dataOf<{ scan: { completed_at: string | null } }>(await x.call('GET', scanUrl)).scan;
    return s.completed_at ? s : undefined;
  });
  await x.capture('GET', scanUrl);
  await x.capture('GET', '/api/v1/security/status');
  await x.capture('POST', '/api/v1/admin/security/block-ip', {
    ip_address: '198.51.100.23',
    reason: 'Credential stuffing against /auth/login',
    duration_hours: 24,
    notify_admins: true,
  });
  // Blocking the same address again changes the block: 200 instead of 201.
  await x.capture('POST', '/api/v1/admin/security/block-ip', {
    ip_address: '198.51.100.23',
    reason: 'Repeated credential stuffing',
    duration_hours: 72,
  });
  await x.call('POST', '/api/v1/admin/security/block-ip', {
    ip_address: '192.0.2.0/24',
    reason: 'Scanner network',
  });
  // A range holding the caller's own address needs `force`.
  await x.refused(409, 'POST', '/api/v1/admin/security/block-ip', {
    ip_address: '203.0.113.0/24',
    reason: 'Office',
  });
  await x.capture('GET', '/api/v1/admin/security/blocked-ips?per_page=5');
  await x.capture('DELETE', `/api/v1/admin/security/blocked-ips/${encodeURIComponent('198.51.100.23')}`);

  await x.capture('GET', '/api/v1/services');
  await x.capture('GET', '/api/v1/services/database');
  await x.capture('POST', '/api/v1/services/cache/restart');
  await x.capture('GET', '/api/v1/components/health');
  await x.capture('GET', '/api/v1/admin/system/health');
  await x.capture('POST', '/api/v1/components/diagnostics', {
    components: ['database', 'cluster_state'],
    tests: ['connectivity', 'performance'],
  });
  const diag = await x.capture<{ task_id: string }>('POST', '/api/v1/components/diagnostics', {
    components: ['database', 'cache'],
    tests: ['connectivity', 'performance'],
    background: true,
  });
  await x.settled(diag.task_id);

  // Metrics, logs and the audit log, now that there was traffic to show.
  await x.capture('GET', '/api/v1/metrics?resolution=5m&metrics=request_count,response_time_p95_ms');
  await x.capture('GET', '/api/v1/metrics/summary');
  await x.capture(
    'GET',
    '/api/v1/admin/system/metrics?resolution=5m&metrics=cpu_usage_percent,memory_usage_mb',
  );
  await x.capture('GET', '/api/v1/admin/system/performance');
  x.record('GET', '/metrics', 200, trimExposition((await x.call('GET', '/metrics')).text), undefined);
  await x.capture('GET', '/api/v1/admin/system/logs?level=INFO&per_page=3');
  await x.capture('GET', '/api/v1/admin/audit-log?per_page=3');
}

/** Backups, a restart, then the restores (which replace the database, sessions included) last of all. */
async function backupsAndRestores(x: Recorder): Promise<void> {
  const core = await x.capture<{ backup_id: string }>('POST', '/api/v1/backup', {
    include: ['configuration', 'database', 'plugins'],
    compression: true,
    encryption: false,
  });
  // One backup runs at a time: the second would be refused with BACKUP_IN_PROGRESS while the first is written.
  await x.settled(core.backup_id);
  const { backup } = await x.capture<{ backup: { id: string } }>('POST', '/api/v1/admin/backup', {
    name: 'before upgrade',
    include_database: true,
    include_config: true,
    include_logs: false,
  });
  await x.settled(backup.id);
  await x.capture('GET', '/api/v1/backup');
  await x.capture('GET', '/api/v1/admin/backup');
  for (const url of [
    `/api/v1/backup/${core.backup_id}/download`,
    `/api/v1/admin/backup/${backup.id}/download`,
  ])
    x.record('GET', url, 200, await describeArchive((await x.call('GET', url)).raw), undefined);

  await x.capture('POST', '/api/v1/admin/system/restart', {
    reason: 'Apply new settings',
    delay_seconds: 30,
    notify_users: true,
  });
  await x.refused(409, 'POST', '/api/v1/admin/system/restart', { reason: 'Apply new settings' });
  await x.until('the system restart', async () => {
    const r = dataOf<{ status: string }>(await x.call('GET', '/api/v1/admin/system/restart'));
    return r.status === 'completed' || r.status === 'failed' ? r : undefined;
  });
  await x.capture('GET', '/api/v1/admin/system/restart');

  const coreRestore = `/api/v1/backup/${core.backup_id}/restore`;
  await x.refused(422, 'POST', coreRestore, { components: ['database'] });
  type Restore = { restore_id: string };
  const first = await x.capture<Restore>('POST', coreRestore, { components: ['database'], confirm: true });
  await x.settled(first.restore_id);
  // Logins from another address from here on: the first one's login rate limit is nearly used up.
  await x.login('203.0.113.80');
  const second = await x.capture<Restore>('POST', `/api/v1/admin/backup/${backup.id}/restore`, {
    components: ['database', 'config'],
    confirm_restore: true,
    create_backup_before_restore: true,
  });
  await x.settled(second.restore_id);
  await x.login('203.0.113.80');
  await x.capture('POST', '/api/v1/auth/logout', undefined, { ip: '203.0.113.80' });
  // The authentication rate limit (10 attempts per 10 minutes per address), from an address guessing logins.
  for (let i = 0; i < 11; i++) {
    const body = { username: 'mallory', password: `guess-${i}` };
    const res = await x.send('POST', '/api/v1/auth/login', body, { token: null, ip: '198.51.100.99' });
    if (res.status === 429) x.record('POST', '/api/v1/auth/login', 429, res.json, undefined);
  }
}

/**
 * Errors provoked on purpose, for operations that have none captured yet: 404 with an unknown id in the
 * path; 422 with an input the schema refuses (an unknown body field, a page size over the limit, a query
 * value of the wrong kind, an over-long id).
 */
async function provokeErrors(x: Recorder): Promise<void> {
  // From an address of its own: the login rate limit of the others is used up.
  const ip = '203.0.113.81';
  await x.login(ip);
  const unknown: Record<string, string> = {
    user_id: newId('usr'),
    session_id: newId('ses'),
    key_id: newId('key'),
    task_id: newId('task'),
    backup_id: newId('bkp'),
    event_id: newId('evt'),
    subscription_id: newId('sub'),
    webhook_id: newId('sub'),
    replay_id: newId('rpl'),
    purge_id: newId('prg'),
    scan_id: newId('scn'),
    alert_id: newId('alr'),
    service_name: 'mailer-legacy',
    plugin_id: 'inventory-sync',
    path: 'status',
    ip: '192.0.2.77',
  };
  for (const [template, item] of Object.entries(x.doc.paths)) {
    for (const [verb, op] of Object.entries(item)) {
      const method = verb.toUpperCase();
      const entry = x.examples.get(op.operationId ?? '') ?? {};
      const body = entry['request'] ?? op.requestBody?.content?.['application/json']?.example;
      const fill = (ids: Record<string, string>) =>
        template.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(ids[name] ?? 'unknown'));
      if (op.responses?.['404'] && entry['404'] === undefined && template.includes('{')) {
        const res = await x.send(method, fill(unknown), body, { ip });
        if (res.status === 404) x.record(method, fill(unknown), 404, res.json, undefined);
      }
      const attempt =
        op.responses?.['422'] && entry['422'] === undefined ? invalidInput(op, body) : undefined;
      if (attempt) {
        const url = fill({ ...unknown, ...attempt.ids }) + attempt.query;
        const res = await x.send(method, url, attempt.body, { ip });
        if (res.status === 422) x.record(method, url, 422, res.json, undefined);
      }
    }
  }
}

function invalidInput(
  op: Operation,
  body: unknown,
): { body?: unknown; query: string; ids: Record<string, string> } | undefined {
  if (body && typeof body === 'object' && !Array.isArray(body))
    return { body: { ...body, unexpected_field: true }, query: '', ids: {} };
  const query = (op.parameters ?? []).filter((p) => p.in === 'query');
  if (query.some((p) => p.name === 'per_page')) return { query: '?per_page=500', ids: {} };
  const first = query[0];
  if (first?.name) {
    const s = first.schema ?? {};
    const wrong =
      s.format === 'date-time'
        ? 'yesterday'
        : s.type === 'integer' || s.type === 'number'
          ? 'ten'
          : s.type === 'array'
            ? 'order..created'
            : 'everything';
    return { query: `?${first.name}=${wrong}`, ids: {} };
  }
  const param = (op.parameters ?? []).find((p) => p.in === 'path');
  if (!param?.name) return undefined;
  return { query: '', ids: { [param.name]: 'x'.repeat((param.schema?.maxLength ?? 100) + 1) } };
}

/** Installs `notes` 1.0.0 from an uploaded package (multipart/form-data), as `platform plugin install --file`. */
async function uploadPlugin(x: Recorder, folder: string): Promise<void> {
  const { archive, sha256 } = await packFolder(folder);
  const fields: Record<string, string> = { source: 'file', sha256, config: '{}', enabled: 'true' };
  const boundary = '----platform-example-boundary';
  const part = (headers: string) =>
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; ${headers}\r\n\r\n`);
  const body = Buffer.concat([
    ...Object.entries(fields).flatMap(([k, v]) => [part(`name="${k}"`), Buffer.from(`${v}\r\n`)]),
    part('name="file"; filename="notes-1.0.0.tgz"\r\nContent-Type: application/gzip'),
    archive,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  const url = '/api/v1/admin/plugins/install';
  const res = await x.call('POST', url, body, {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
  const file = `(binary) notes-1.0.0.tgz, a plugin package of ${archive.length} bytes (platform plugin pack)`;
  x.record('POST', url, res.status, res.json, undefined, { ...fields, file });
}

/** The SSE stream, read on a real socket: resumed after the first event, so it replays the next two. */
async function captureStream(x: Recorder, after: string): Promise<void> {
  const base = await x.platform.listen();
  const url = `/api/v1/events/stream?patterns=order.*&last_event_id=${after}`;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), 10_000);
  let text = '';
  try {
    const res = await fetch(`${base}${url}`, {
      headers: { authorization: `Bearer ${x.token}` },
      signal: abort.signal,
    });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    while ((text.match(/^event: /gm) ?? []).length < 2) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    abort.abort();
  } finally {
    clearTimeout(timer);
  }
  if (!/^event: /m.test(text)) throw new Error(`the stream sent no event: ${text}`);
  x.record('GET', url, 200, text, undefined);
}

/** A binary archive cannot be shown in JSON: its example says what it is and what it holds. */
async function describeArchive(archive: Buffer): Promise<string> {
  const parts = new Map<string, number>();
  const parser = new Parser({
    onReadEntry: (entry) => {
      if (!entry.path.endsWith('/')) {
        const top = entry.path.includes('/') ? `${entry.path.split('/')[0]}/` : entry.path;
        parts.set(top, (parts.get(top) ?? 0) + 1);
      }
      entry.resume();
    },
  });
  const ended = once(parser, 'end');
  parser.end(archive);
  await ended;
  const kind = archive[0] === 0x1f && archive[1] === 0x8b ? 'gzip-compressed tar archive' : 'tar archive';
  const listed = [...parts].map(([top, n]) =>
    top.endsWith('/') ? `${top} (${n} ${n === 1 ? 'file' : 'files'})` : top,
  );
  return `(binary) a ${kind} of ${archive.length} bytes: ${listed.join(', ')}`;
}

/** The Prometheus text keeps every metric family, with the series of two routes only (there is one per route). */
function trimExposition(text: string): string {
  const kept = ['/api/v1/auth/login', '/api/v1/events'];
  return text
    .split('\n')
    .filter((line) => {
      const route = /route="([^"]*)"/.exec(line)?.[1];
      return route === undefined || kept.includes(route);
    })
    .join('\n');
}

function write(x: Recorder, root: string): void {
  const missing: string[] = [];
  for (const item of Object.values(x.doc.paths))
    for (const op of Object.values(item))
      for (const code of Object.keys(op.responses ?? {}))
        if (/^2/.test(code) && x.examples.get(op.operationId ?? '')?.[code] === undefined)
          missing.push(`${op.operationId} ${code}`);
  const sorted: Record<string, Entry> = {};
  for (const id of [...x.examples.keys()].sort()) {
    const entry = x.examples.get(id)!;
    sorted[id] = Object.fromEntries(
      Object.keys(entry)
        .sort()
        .map((k) => [k, entry[k]]),
    );
  }
  // The capture listens on a free port; a configuration example shows the default one.
  let text = JSON.stringify(sorted, null, 2).replaceAll('"port": 0,', '"port": 8080,');
  const swaps: [string, string][] = [
    ...x.secrets.swaps,
    [join(root, 'data'), '/var/lib/platform'],
    [root, '/var/lib/platform'],
    [PROJECT_ROOT, '/opt/platform'],
    [x.hooks, 'https://hooks.example.com'],
    ...(hostname().length >= 4 ? [[hostname(), 'platform-1'] as [string, string]] : []),
  ];
  // Longest first, so a value that contains another is replaced whole.
  swaps.sort((a, b) => b[0].length - a[0].length);
  for (const [from, to] of swaps) text = text.split(JSON.stringify(from).slice(1, -1)).join(to);
  writeFileSync(OUTPUT, `${text}\n`);
  console.log(`wrote the examples of ${x.examples.size} operations to ${OUTPUT}`);
  if (missing.length > 0) {
    console.error(`no success example captured for:\n  ${missing.join('\n  ')}`);
    process.exitCode = 1;
  }
}

/** `notes` 1.0.0 to 1.2.1 in a local plugin repository: GET, POST, PUT, PATCH and DELETE routes. */
function writeExamplePlugin(repo: string): void {
  for (const version of ['1.0.0', '1.1.0', '1.2.0', '1.2.1']) {
    const dir = join(repo, `notes-${version}`);
    mkdirSync(dir, { recursive: true });
    const manifest = {
      name: 'notes',
      version,
      description: 'Shared operator notes kept in plugin storage, with a small REST interface',
      author: 'Example Corp',
      license: 'MIT',
      platform_version: '>=0.1.0 <1.0.0',
      permissions: ['http:routes', 'storage:use'],
      config_schema: { type: 'object', properties: {}, additionalProperties: false },
    };
    writeFileSync(join(dir, 'plugin.json'), JSON.stringify(manifest));
    writeFileSync(join(dir, 'index.js'), NOTES_PLUGIN);
  }
}

const NOTES_PLUGIN = `export default {
  setup(ctx) {
    const key = (id) => 'note:' + id;
    const load = async (id) => {
      const note = await ctx.storage.get(key(id));
      if (!note) throw ctx.routes.error('RESOURCE_NOT_FOUND', 'No note ' + id, { id });
      return note;
    };
    ctx.routes.get('/notes', async () => ({
      notes: await Promise.all((await ctx.storage.keys('note:')).map((k) => ctx.storage.get(k))),
    }));
    ctx.routes.post('/notes', async (req) => {
      const { title = '', body = '' } = req.body ?? {};
      const note = { id: 'note_' + Date.now().toString(36), title, body, pinned: false,
        author: req.user?.username ?? null, updated_at: new Date().toISOString() };
      await ctx.storage.set(key(note.id), note);
      return ctx.routes.respond(201, { note });
    });
    const change = async (req) => {
      const old = await load(req.params.id);
      const base = req.method === 'PUT' ? { ...old, title: '', body: '', pinned: false } : old;
      const { title = base.title, body = base.body, pinned = base.pinned } = req.body ?? {};
      const note = { ...base, title, body, pinned, updated_at: new Date().toISOString() };
      await ctx.storage.set(key(note.id), note);
      return { note };
    };
    ctx.routes.put('/notes/:id', change);
    ctx.routes.patch('/notes/:id', change);
    ctx.routes.delete('/notes/:id', async (req) => {
      await load(req.params.id);
      await ctx.storage.delete(key(req.params.id));
      return { deleted: req.params.id };
    });
  },
};
`;

/** Finds the operation of the document serving `method url` (a static path wins over a templated one). */
function matcher(doc: Doc): (method: string, url: string) => Operation | undefined {
  const templates = compilePathTemplates(Object.keys(doc.paths));
  return (method, url) => {
    const path = url.split('?')[0] ?? url;
    for (const t of templates) {
      const op = doc.paths[t.template]?.[method.toLowerCase()];
      if (op && t.pattern.test(path)) return op;
    }
    return undefined;
  };
}

const root = mkdtempSync(join(tmpdir(), 'platform-examples-'));
try {
  await main(root);
} finally {
  rmSync(root, { recursive: true, force: true });
}
