import './zz-patch.js';
import { performance } from 'node:perf_hooks';
import { startPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';

const receiver = new Receiver();
await receiver.start();
const t = await startPlatform({ webhooks: { poll_interval_ms: 200 }, logging: { level: 'silent' } });
const admin = await t.adminToken();
for (let i = 0; i < 10; i++) {
  await t.request('POST', '/api/v1/events/subscriptions', {
    token: admin,
    body: { event_patterns: ['p.*'], webhook_config: { url: `${receiver.url}/h${i}` } },
  });
}
const N = 800;
const start = performance.now();
const emits = [];
for (let i = 0; i < N; i++) {
  emits.push(t.request('POST', '/api/v1/events', { token: admin, body: { event_type: 'p.x', data: { i } } }));
  if (emits.length >= 32) {
    await Promise.all(emits.splice(0));
  }
}
await Promise.all(emits);
const emitted = performance.now();
while (receiver.requests.length < N * 10 && performance.now() - start < 60000)
  await new Promise((r) => setTimeout(r, 20));
const end = performance.now();
console.log(
  `emit ${(emitted - start).toFixed(0)} ms; deliveries ${receiver.requests.length} in ${(end - start).toFixed(0)} ms = ${(receiver.requests.length / ((end - start) / 1000)).toFixed(0)}/s`,
);
const d = t.platform.context.registry.get('webhook_dispatcher');
console.log(d.metrics());
await t.close();
await receiver.close();
