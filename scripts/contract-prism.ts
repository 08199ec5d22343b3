/**
 * A black-box pass through the Prism validating proxy: the platform runs as a real process, Prism sits in
 * front of it with the OpenAPI document (`prism proxy … --errors`), and a bounded set of requests goes through
 * Prism: every GET route, and create / update / delete flows for users, subscriptions and events. Prism
 * answers 422 for a request and 500 for a response that departs from the document (as
 * application/problem+json); any such answer, or a 5xx of the platform itself, fails the run.
 *
 * Usage: npx tsx scripts/contract-prism.ts openapi.json
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { platformCommand } from './platform-command.js';

const docPath = process.argv[2] ?? 'openapi.json';
const doc = JSON.parse(readFileSync(docPath, 'utf8')) as { paths: Record<string, Record<string, unknown>> };
const PASSWORD = 'prism-admin-password-1';
const PRISM_PORT = Number(process.env['PRISM_PORT'] ?? 4010);
const dataDir = mkdtempSync(join(tmpdir(), 'platform-prism-'));
const children: ChildProcess[] = [];

function start(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    const timer = setTimeout(() => reject(new Error(`${command} did not start:\n${output}`)), 90_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] ?? match[0]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${command} exited with ${code}:\n${output}`)));
  });
}

const problems: string[] = [];
let sent = 0;

async function call(
  method: string,
  path: string,
  opts: { token?: string; body?: unknown } = {},
): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (opts.token) headers['authorization'] = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`http://127.0.0.1:${PRISM_PORT}${path}`, {
    method,
    headers,
    ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) }),
  });
  sent++;
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (type.includes('problem+json') || /stoplight\.io\/prism/.test(text))
    problems.push(`${method} ${path} → Prism ${res.status}: ${text.slice(0, 600)}`);
  else if (res.status >= 500) problems.push(`${method} ${path} → ${res.status}: ${text.slice(0, 300)}`);
  return { status: res.status, json };
}

const dataOf = (r: { json: unknown }) =>
  (r.json as { data?: Record<string, unknown> } | undefined)?.data ?? {};

async function main(): Promise<void> {
  // node itself, not npx: the child killed at the end must be the server (npx does not pass the signal on).
  const base = await start(
    process.execPath,
    [...platformCommand().args, 'serve'],
    {
      PLATFORM_ADMIN_PASSWORD: PASSWORD,
      PLATFORM__SERVER__PORT: '0',
      PLATFORM__STORAGE__DATA_DIR: dataDir,
      PLATFORM__CONSOLE__ENABLED: 'false',
      PLATFORM__RATE_LIMITS__AUTH__MAX: '1000',
      PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true',
    },
    /listening on (http:\/\/[0-9.:]+)/,
  );
  await start(
    '.ci/tools/node_modules/.bin/prism',
    ['proxy', docPath, base, '-h', '127.0.0.1', '-p', String(PRISM_PORT), '--errors'],
    {},
    /Prism is listening/,
  );

  const login = await call('POST', '/api/v1/auth/login', { body: { username: 'admin', password: PASSWORD } });
  const token = dataOf(login)['access_token'] as string;
  if (!token) throw new Error(`login through Prism failed: ${JSON.stringify(login.json)}`);

  // Users: create, read, update, suspend, delete.
  const created = await call('POST', '/api/v1/admin/users', {
    token,
    body: {
      username: 'prism-user',
      email: 'prism@example.test',
      password: 'prism-user-password',
      roles: ['user'],
    },
  });
  const userId = (dataOf(created)['user'] as { id?: string } | undefined)?.id ?? 'usr_missing';
  await call('PUT', `/api/v1/admin/users/${userId}`, { token, body: { full_name: 'Prism User' } });
  await call('PATCH', `/api/v1/users/${userId}`, { token, body: { full_name: 'Prism User 2' } });
  // Subscriptions: create, update, pause, delete; webhooks alike.
  const sub = await call('POST', '/api/v1/events/subscriptions', {
    token,
    body: {
      name: 'prism',
      event_patterns: ['order.*'],
      delivery_method: 'webhook',
      webhook_config: { url: 'http://127.0.0.1:9/hook' },
    },
  });
  const subId =
    (dataOf(sub)['subscription'] as { subscription_id?: string } | undefined)?.subscription_id ??
    'sub_missing';
  await call('PUT', `/api/v1/events/subscriptions/${subId}`, { token, body: { name: 'prism renamed' } });
  await call('PATCH', `/api/v1/events/subscriptions/${subId}`, { token, body: { enabled: false } });
  const hook = await call('POST', '/api/v1/webhooks', {
    token,
    body: { url: 'http://127.0.0.1:9/hook2', events: ['order.created'] },
  });
  const hookId = JSON.stringify(hook.json).match(/"(sub_[A-Za-z0-9]+)"/)?.[1] ?? 'sub_missing';
  // Events: emit, then read.
  const emitted = await call('POST', '/api/v1/events', {
    token,
    body: { event_type: 'order.created', source: 'prism', data: { order: 1 }, priority: 5 },
  });
  const eventId = (dataOf(emitted)['event'] as { event_id?: string } | undefined)?.event_id ?? 'evt_missing';

  const ids: Record<string, string> = {
    user_id: userId,
    subscription_id: subId,
    webhook_id: hookId,
    event_id: eventId,
    service_name: 'database',
  };
  for (const [path, item] of Object.entries(doc.paths)) {
    // The stream never ends; plugin routes under /ext/ are each plugin's own, not the platform's document.
    if (!item['get'] || path === '/api/v1/events/stream' || path.includes('{*}')) continue;
    const url = path.replace(/\{([^}]+)\}/g, (_m, name: string) => ids[name] ?? 'prism-made-up-id');
    await call('GET', url, { token });
  }

  await call('DELETE', `/api/v1/webhooks/${hookId}`, { token });
  await call('DELETE', `/api/v1/events/subscriptions/${subId}`, { token });
  await call('POST', `/api/v1/admin/users/${userId}/suspend`, { token, body: { reason: 'prism flow' } });
  await call('DELETE', `/api/v1/admin/users/${userId}`, { token });
  await call('POST', '/api/v1/auth/logout', { token });
}

let failed = false;
try {
  await main();
  console.log(`Prism: ${sent} requests through the validating proxy, ${problems.length} problems`);
  for (const p of problems) console.log(`  ${p}`);
  failed = problems.length > 0;
} catch (err) {
  console.error(err);
  failed = true;
} finally {
  for (const child of children) child.kill('SIGTERM');
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
