import './zz-patch.js';
import { performance } from 'node:perf_hooks';
import { spawnJsonChild } from '../../bench/json-child.js';
import { startPlatform } from '../helpers/test-platform.js';

const receiver = await spawnJsonChild<{ url: string }>('webhook-receiver.ts', []);
const url = receiver.first.url;
const t = await startPlatform({ webhooks: { poll_interval_ms: 200 }, logging: { level: 'silent' } });
const admin = await t.adminToken();
for (let i = 0; i < 10; i++) {
  await t.request('POST', '/api/v1/events/subscriptions', { token: admin, body: { event_patterns: ['p.*'], webhook_config: { url: `${url}/h${i}` } } });
}
const d = t.platform.context.registry.get('webhook_dispatcher');
await d.stop();
const N = Number(process.env.N ?? 1500);
const emits = [];
for (let i = 0; i < N; i++) {
  emits.push(t.request('POST', '/api/v1/events', { token: admin, body: { event_type: 'p.x', data: { i, sent_at: Date.now() } } }));
  if (emits.length >= 32) await Promise.all(emits.splice(0));
}
await Promise.all(emits);
const stats = async () => (await (await fetch(`${url}/stats`)).json()) as { count: number };
const start = performance.now();
if (process.env.PROFILE) { const { Session } = await import('node:inspector/promises'); const s = new Session(); s.connect(); await s.post('Profiler.enable'); await s.post('Profiler.start'); (globalThis as any).__s = s; }
await d.start();
while ((await stats()).count < N * 10 && performance.now() - start < 60000) await new Promise((r) => setTimeout(r, 20));
const end = performance.now();
if (process.env.PROFILE) { const s = (globalThis as any).__s; const { profile } = await s.post('Profiler.stop'); (await import('node:fs')).writeFileSync('/tmp/prof/drain.cpuprofile', JSON.stringify(profile)); }
console.log(`drain ${(await stats()).count} in ${(end - start).toFixed(0)} ms = ${(((await stats()).count) / ((end - start) / 1000)).toFixed(0)}/s`);
console.log(JSON.stringify(d.metrics()));
await t.close();
receiver.child.kill();
