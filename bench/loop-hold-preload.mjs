// Preloaded (`node --import`) into the server by bench/first-requests.ts: the stall probe of
// test/helpers/stall-probe.ts inside the server process. Every turn of the event loop that held it more than
// 2 ms of this thread's CPU is noted (Linux: /proc/thread-self/schedstat); SIGUSR2 writes the notes to
// $LOOP_HOLD_OUT and starts a new list.
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const cpuMs = () => Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e6;
let holds = [];
let last = performance.now();
let lastCpu = cpuMs();
const turn = () => {
  const now = performance.now();
  const cpu = cpuMs();
  const held = Math.max(0, Math.min(now - last - 1, cpu - lastCpu));
  if (held > 2) holds.push(Math.round(held * 10) / 10);
  last = now;
  lastCpu = cpuMs();
  setTimeout(turn, 1).unref();
};
setTimeout(turn, 1).unref();
process.on('SIGUSR2', () => {
  writeFileSync(process.env.LOOP_HOLD_OUT ?? '/dev/null', JSON.stringify(holds));
  holds = [];
});
