import { platformRuntime, startPlatformProcess } from './platform-process.js';
const rt = platformRuntime();
console.log(rt.label);
const p = await startPlatformProcess({ runtime: { label: 'x', args: ['--cpu-prof', '--cpu-prof-dir=/tmp/jprof2', ...rt.args] } });
console.log('cold', p.listeningMs, p.readyMs);
await p.stop({ keepData: true });
const w = await startPlatformProcess({ runtime: { label: 'x', args: ['--cpu-prof', '--cpu-prof-dir=/tmp/jprof2', ...rt.args] }, dataDir: p.dataDir });
console.log('warm', w.listeningMs, w.readyMs);
await w.stop();
