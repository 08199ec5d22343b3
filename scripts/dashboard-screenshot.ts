/**
 * Renders docs/grafana/platform.png: the panels of docs/grafana/platform.json, each drawn from its own PromQL
 * queries answered by a real Prometheus that scraped a real platform under load. No Grafana is needed (it is
 * not packaged for Debian); Prometheus is (`apt-get install prometheus`).
 *
 *   npm run build && npx tsx scripts/dashboard-screenshot.ts [--seconds 120] [--prometheus /usr/bin/prometheus]
 *
 * What happens: the platform starts in a temporary folder; an API key is made for Prometheus's `authorization`
 * setting; a webhook subscription to a local receiver (one answer in ten a 500), an SSE and a WebSocket stream
 * and a backup give the panels something to show; events, reads, not-found requests and failed logins are sent
 * for `--seconds`; Prometheus scrapes `/metrics` every 2 s. Then each panel's queries run as range queries and
 * Chromium draws them with uPlot. The rate windows of the dashboard (`[5m]`) are shortened to `[30s]` so that a
 * two-minute run fills the charts; nothing else in the queries changes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { WebSocket } from 'ws';
import { adminApiKey, adminToken, platformRuntime, startPlatformProcess } from '../bench/platform-process.js';
import { resolveChromium } from '../test/console/chromium-path.js';

const ROOT = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    prometheus: { type: 'string', default: '/usr/bin/prometheus' },
    out: { type: 'string', default: join(ROOT, 'docs/grafana/platform.png') },
  },
});
const SECONDS = Number(values.seconds);
const PROM_PORT = 19090;

interface Panel {
  type: 'stat' | 'timeseries';
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { expr: string; legendFormat?: string }[];
  fieldConfig?: { defaults?: { unit?: string } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'docs/grafana/platform.json'), 'utf8')) as {
    title: string;
    panels: Panel[];
  };
  const platform = await startPlatformProcess({
    runtime: platformRuntime(),
    // The receiver listens on 127.0.0.1, a private address that webhooks refuse by default.
    env: { PLATFORM__WEBHOOKS__ALLOW_PRIVATE_TARGETS: 'true' },
  });
  const receiver = await startReceiver();
  const promDir = join(tmpdir(), `platform-prom-${process.pid}`);
  let prometheus: ChildProcess | undefined;
  const streams: { close(): void }[] = [];
  try {
    const token = await adminToken(platform.url);
    const key = await adminApiKey(platform.url, token);
    const api = (method: string, path: string, body?: unknown, auth = token) =>
      fetch(`${platform.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${auth}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(async (r) => ({ status: r.status, body: await r.text() }));

    const sub = await api('POST', '/api/v1/events/subscriptions', {
      name: 'orders to the shop',
      event_patterns: ['order.*'],
      webhook_config: { url: receiver.url, secret: 'dashboard-screenshot-secret' },
    });
    if (sub.status !== 201) throw new Error(`subscription: ${sub.status} ${sub.body}`);
    for (let i = 0; i < 3; i++) {
      streams.push(await openSse(`${platform.url}/api/v1/events/stream?patterns=order.*`, token));
    }
    streams.push(
      await openWs(`${platform.url.replace('http', 'ws')}/api/v1/events/stream?patterns=**`, token),
    );

    writeFileSync(
      join(tmpdir(), `platform-prom-${process.pid}.yml`),
      [
        'global: { scrape_interval: 2s, evaluation_interval: 2s }',
        'scrape_configs:',
        '  - job_name: platform',
        `    authorization: { credentials: "${key}" }`,
        `    static_configs: [{ targets: ["${new URL(platform.url).host}"] }]`,
      ].join('\n'),
    );
    prometheus = spawn(
      values.prometheus,
      [
        `--config.file=${join(tmpdir(), `platform-prom-${process.pid}.yml`)}`,
        `--storage.tsdb.path=${promDir}`,
        `--web.listen-address=127.0.0.1:${PROM_PORT}`,
      ],
      { stdio: 'ignore' },
    );

    let backups = 0;
    const start = Date.now();
    let n = 0;
    console.log(`platform ${platform.url}, Prometheus :${PROM_PORT}; ${SECONDS} s of load`);
    while (Date.now() - start < SECONDS * 1000) {
      const burst = 5 + Math.round(5 * Math.sin((Date.now() - start) / 15_000) ** 2);
      await Promise.all(
        Array.from({ length: burst }, () =>
          api('POST', '/api/v1/events', {
            event_type: n++ % 3 === 0 ? 'order.created' : 'user.seen',
            source: 'shop',
            data: { n },
          }),
        ),
      );
      if (backups < 3 && Date.now() - start > (backups * SECONDS * 1000) / 3) {
        backups += 1;
        await api('POST', '/api/v1/backup', {});
      }
      await api('GET', '/api/v1/events?per_page=20');
      await api('GET', '/api/v1/status');
      if (n % 7 === 0) await api('GET', '/api/v1/nothing-here');
      if (n % 11 === 0) await api('GET', '/api/v1/cache/stats').catch(() => undefined);
      if (n % 31 === 0)
        await fetch(`${platform.url}/api/v1/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ username: 'admin', password: 'not the password' }),
        });
      await sleep(100);
    }
    const end = Math.floor(Date.now() / 1000);
    const begin = end - SECONDS;
    const panels = [];
    for (const panel of dashboard.panels) {
      const series = [];
      for (const target of panel.targets) {
        const expr = target.expr.replaceAll('[5m]', '[30s]');
        const q = new URLSearchParams({ query: expr, start: String(begin), end: String(end), step: '2' });
        const res = await fetch(`http://127.0.0.1:${PROM_PORT}/api/v1/query_range?${q}`);
        const body = (await res.json()) as {
          data?: { result: { metric: Record<string, string>; values: [number, string][] }[] };
        };
        for (const r of body.data?.result ?? []) {
          series.push({ name: legend(target.legendFormat, r.metric, expr), values: r.values });
        }
      }
      panels.push({ ...panel, series });
      console.log(`${panel.title}: ${series.length} series`);
    }
    await render(dashboard.title, panels, begin, end);
    console.log(`written ${values.out}`);
  } finally {
    for (const s of streams) s.close();
    prometheus?.kill('SIGTERM');
    await receiver.close();
    await platform.stop();
    rmSync(promDir, { recursive: true, force: true });
  }
}

function legend(format: string | undefined, metric: Record<string, string>, expr: string): string {
  if (format) return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k: string) => metric[k] ?? '');
  const labels = Object.entries(metric).filter(([k]) => k !== '__name__' && k !== 'job' && k !== 'instance');
  return labels.length > 0 ? labels.map(([k, v]) => `${k}=${v}`).join(', ') : expr.slice(0, 60);
}

async function startReceiver(): Promise<{ url: string; close(): Promise<void> }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.statusCode = ++count % 10 === 0 ? 500 : 200;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

async function openSse(url: string, token: string): Promise<{ close(): void }> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  void res.body?.pipeTo(new WritableStream()).catch(() => undefined);
  return { close: () => controller.abort() };
}

async function openWs(url: string, token: string): Promise<{ close(): void }> {
  const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
  return { close: () => socket.terminate() };
}

async function render(
  title: string,
  panels: (Panel & { series: { name: string; values: [number, string][] }[] })[],
  begin: number,
  end: number,
): Promise<void> {
  const uplotJs = readFileSync(join(ROOT, 'node_modules/uplot/dist/uPlot.iife.min.js'), 'utf8');
  const uplotCss = readFileSync(join(ROOT, 'node_modules/uplot/dist/uPlot.min.css'), 'utf8');
  const rowPx = 36;
  const colors = ['#73bf69', '#f2cc0c', '#5794f2', '#ff7383', '#b877d9', '#ff9830', '#8ab8ff', '#96d98d'];
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>${uplotCss}
    body { margin: 0; background: #111217; color: #ccccdc; font: 13px Inter, system-ui, sans-serif; }
    h1 { font-size: 18px; font-weight: 500; margin: 12px 16px; }
    .grid { position: relative; margin: 0 8px; }
    .panel { position: absolute; box-sizing: border-box; background: #181b1f; border: 1px solid #2c3235;
      border-radius: 2px; padding: 6px 8px; overflow: hidden; }
    .panel h2 { font-size: 13px; font-weight: 500; margin: 0 0 4px; }
    .stat { font-size: 40px; font-weight: 500; color: #73bf69; margin-top: 24px; }
    .stat small { display: block; font-size: 12px; color: #8e8e8e; }
    .u-legend { font-size: 11px; } .u-axis { color: #8e8e8e; }
  </style><script>${uplotJs}</script></head><body><h1>${title}</h1><div class="grid" id="grid"></div>
  <script>
    const panels = ${JSON.stringify(panels)};
    const colors = ${JSON.stringify(colors)};
    const width = 1600 - 16, col = width / 24, row = ${rowPx};
    const grid = document.getElementById('grid');
    // Values as Grafana would show them: bytes in MB, fractions of a second in ms.
    const formatFor = (unit, max) => (v) => v === null ? '' : unit === 's' && max < 1 ? Math.round(v * 1e4) / 10 + ' ms'
      : unit === 'percentunit' ? Math.round(v * 1e3) / 10 + ' %' : max >= 1e6 ? Math.round(v / 1e5) / 10 + ' MB'
      : String(Math.round(v * 1e3) / 1e3);
    let bottom = 0;
    for (const p of panels) {
      const el = document.createElement('div');
      el.className = 'panel';
      Object.assign(el.style, { left: p.gridPos.x * col + 'px', top: p.gridPos.y * row + 'px',
        width: p.gridPos.w * col - 4 + 'px', height: p.gridPos.h * row - 4 + 'px' });
      el.innerHTML = '<h2></h2>';
      el.firstChild.textContent = p.title;
      grid.appendChild(el);
      bottom = Math.max(bottom, (p.gridPos.y + p.gridPos.h) * row);
      if (p.type === 'stat') {
        const d = document.createElement('div');
        d.className = 'stat';
        const last = p.series.map((s) => Number(s.values[s.values.length - 1][1]));
        const unit = p.fieldConfig?.defaults?.unit;
        d.textContent = last.length === 0 ? 'none'
          : unit === 's' ? Math.round(last[0]) + ' s' : last.map((v) => Math.round(v * 100) / 100).join(', ');
        const names = document.createElement('small');
        names.textContent = last.length === 0 ? 'no series: nothing to report' : p.series.map((s) => s.name).join(', ');
        d.appendChild(names);
        el.appendChild(d);
        continue;
      }
      const xs = [];
      for (let t = ${begin}; t <= ${end}; t += 2) xs.push(t);
      const data = [xs, ...p.series.map((s) => {
        const at = new Map(s.values.map(([t, v]) => [Math.round(t), Number(v)]));
        return xs.map((t) => { const v = at.get(t); return v === undefined || !isFinite(v) ? null : v; });
      })];
      const max = Math.max(0, ...data.slice(1).flat().filter((v) => v !== null));
      const format = formatFor(p.fieldConfig?.defaults?.unit, max);
      new uPlot({
        width: p.gridPos.w * col - 22, height: p.gridPos.h * row - 80,
        series: [{}, ...p.series.map((s, i) => ({ label: s.name, stroke: colors[i % colors.length], width: 1.5 }))],
        axes: [{ stroke: '#8e8e8e', grid: { stroke: '#2c3235' } },
          { stroke: '#8e8e8e', grid: { stroke: '#2c3235' }, size: 70, values: (u, ticks) => ticks.map(format) }],
        legend: { live: false },
      }, data, el);
    }
    grid.style.height = bottom + 'px';
  </script></body></html>`;
  const { path } = await resolveChromium();
  const browser = await chromium.launch({ executablePath: path, args: ['--no-sandbox', '--disable-gpu'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1600, height: 900 }, locale: 'en-US' });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    await page.setContent(html);
    if (errors.length > 0) throw new Error(`the page failed: ${errors.join('; ')}`);
    await page.screenshot({ path: values.out, fullPage: true });
  } finally {
    await browser.close();
  }
}

await main();
