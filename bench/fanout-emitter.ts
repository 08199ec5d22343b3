/**
 * The fan-out benchmark's producer, a process of its own as a real producer is: it emits `fan.tick` events
 * at a fixed rate over keep-alive connections, each carrying its send time (`sent_at`) in its data. When it
 * shared a process with the two thousand stream readers, their reading held up its sends and the answers to
 * them, and that wait counted as the platform's latency.
 *
 * Started by bench/fanout-latency.ts with one JSON argument; prints `{"started":…}` at its first emit and
 * `{"emitted":…,"answered_in_time":…}` (each with its CPU seconds so far) when every emit is answered (or 10 s after the last one).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';

interface EmitterOptions {
  url: string;
  token: string;
  rate: number;
  duration: number;
  sockets: number;
}

const { url, token, rate, duration, sockets } = JSON.parse(process.argv[2] ?? '{}') as EmitterOptions;
const now = () => performance.timeOrigin + performance.now();
const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
let answered = 0;

const emitOne = () =>
  new Promise<void>((resolve) => {
    const body = JSON.stringify({ event_type: 'fan.tick', data: { sent_at: now() } });
    const req = http.request(
      `${url}/api/v1/events`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          answered += 1;
          resolve();
        });
      },
    );
    req.on('error', () => resolve());
    req.end(body);
  });

// CPU seconds this process has used, printed with both lines (the benchmark counts the clients' CPU).
const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
const started = now();
process.stdout.write(`${JSON.stringify({ started, cpu: cpu() })}\n`);
let emitted = 0;
const pending: Promise<void>[] = [];
while (now() - started < duration * 1000) {
  const due = Math.floor(((now() - started) / 1000) * rate);
  while (emitted < due) {
    pending.push(emitOne());
    emitted += 1;
  }
  await new Promise((r) => setTimeout(r, 2));
}
const answeredInTime = answered;
await Promise.race([Promise.all(pending), new Promise((r) => setTimeout(r, 10_000))]);
process.stdout.write(`${JSON.stringify({ emitted, answered_in_time: answeredInTime, cpu: cpu() })}\n`);
agent.destroy();
