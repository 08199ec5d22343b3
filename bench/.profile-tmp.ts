import { httpLoad } from './http-load.js';
import { adminToken, platformRuntime, startPlatformProcess } from './platform-process.js';

const rt = platformRuntime();
const path = process.argv[2] ?? '/api/v1/events?per_page=20';
const p = await startPlatformProcess({
  runtime: { label: 'prof', args: ['--cpu-prof', '--cpu-prof-dir=/tmp/jprof', ...rt.args] },
});
const token = await adminToken(p.url);
const h = { authorization: `Bearer ${token}` };
for (let i = 0; i < 100; i++)
  await fetch(`${p.url}/api/v1/events`, {
    method: 'POST',
    headers: { ...h, 'content-type': 'application/json' },
    body: JSON.stringify({ event_type: 'a.b', data: { i } }),
  });
const t0 = performance.now();
for (let i = 0; i < 20; i++) {
  const r = await fetch(`${p.url}${path}`, { headers: h });
  await r.text();
}
console.log('sequential ms/req', (performance.now() - t0) / 20);
console.log(await httpLoad({ url: `${p.url}${path}`, headers: h, connections: 16, duration: 4 }));
await p.stop();
