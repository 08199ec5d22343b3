import { type ChildProcess, spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { workerEntry } from '../kernel/worker-entry.js';
import { type PlatformSide, type PluginHost, PluginTimeoutError } from './plugin-host.js';
import {
  isRecorded,
  markRecorded,
  PluginCallError,
  type Registration,
  toWireError,
  type WireError,
} from './plugin-wire.js';
import type { FromWorker, ToWorker, WorkerStart, WorkerStats } from './worker-messages.js';

// Built, the entry is `plugin-worker.js` beside this module; from the sources (tests, `npm run dev`) it is the
// TypeScript file, bundled into one program for the child, so the child needs neither tsx nor read access to
// the source tree (kernel/worker-entry.ts).
const ENTRY = workerEntry('plugin-worker', import.meta.url, { format: 'esm' });

/** Node's permission model: `--permission` from Node 22.13, `--experimental-permission` on Node 20. */
const PERMISSION_FLAG = process.allowedNodeEnvironmentFlags.has('--permission')
  ? '--permission'
  : '--experimental-permission';
const QUIET = process.allowedNodeEnvironmentFlags.has('--disable-warning')
  ? ['--disable-warning=ExperimentalWarning']
  : [];

/** How the child runs the worker entry: the built file (its folder is readable), or the bundled program as `-e` code. */
async function program(): Promise<{ args: string[]; reads: string[] }> {
  const entry = await ENTRY();
  if ('file' in entry) return { args: [entry.file], reads: [dirname(entry.file)] };
  return { args: ['--input-type=module', '-e', entry.code], reads: [] };
}

/** A path and, when it differs, the path with its links resolved: the permission model checks either. */
function bothSpellings(path: string): string[] {
  try {
    const real = realpathSync(path);
    return real === path ? [path] : [path, real];
  } catch {
    return [path];
  }
}

/**
 * Starts a plugin's own Node process under Node's permission model: it may read its package folder and its
 * data folder and write only the latter; it may not start processes or threads, load native addons or use the
 * inspector. Its heap is limited by `--max-old-space-size`, its environment is empty (the platform's secrets
 * are not inherited) and its working folder is its data folder.
 */
async function spawnChild(dir: string, dataDir: string, memoryMb: number): Promise<ChildProcess> {
  const { args, reads } = await program();
  const allowRead = [...reads, ...bothSpellings(dir), ...bothSpellings(dataDir)];
  const flags = [
    PERMISSION_FLAG,
    ...QUIET,
    ...allowRead.map((p) => `--allow-fs-read=${p}`),
    ...bothSpellings(dataDir).map((p) => `--allow-fs-write=${p}`),
    `--max-old-space-size=${memoryMb}`,
  ];
  return spawn(process.execPath, [...flags, ...args], {
    cwd: dataDir,
    env: {},
    stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
}

const BOOT_TIMEOUT_MS = 60_000;
// The end of the child's standard error, kept to tell why it died (V8 prints its out-of-memory report there).
const STDERR_TAIL = 4096;

/**
 * Runs a plugin in a child process of its own (`isolation: worker`) with a heap limit
 * (`plugins.worker_memory_mb`) and a file system limited to its own folders (docs/adr/0009), behind the same
 * ctx interface as inline plugins, by message passing. Every call into the plugin (setup, a route, an event, a
 * task, teardown) has the call timeout: a plugin that does not answer in time — an endless loop, say — has its
 * process killed, and `onCrash` tells the platform, which marks the plugin `error`.
 */
export class WorkerHost implements PluginHost {
  readonly isolation = 'worker';
  private worker: ChildProcess | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stopping = false;
  private lastMemoryMb: number | null = null;
  private booted: (() => void) | undefined;
  private stderrTail = '';

  constructor(
    private readonly options: {
      dir: string;
      main: string;
      /** The plugin's own folder for files: the only one it may write. */
      dataDir: string;
      info: WorkerStart['info'];
      side: PlatformSide;
      timeoutMs: () => number;
      memoryMb: number;
      /** The process died or was stopped for not answering: the plugin cannot serve until it is loaded again. */
      onCrash: (reason: string) => void;
    },
  ) {}

  async start(): Promise<void> {
    const { dir, main, dataDir, info } = this.options;
    const worker = await spawnChild(dir, dataDir, this.options.memoryMb);
    this.worker = worker;
    worker.stderr?.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      this.stderrTail = (this.stderrTail + chunk.toString()).slice(-STDERR_TAIL);
    });
    worker.on('message', (m: FromWorker) => this.receive(m));
    worker.on('error', (err: Error) => this.crashed(`the plugin's process failed: ${err.message}`));
    worker.on('exit', (code, signal) => this.crashed(this.describeExit(code, signal)));
    // Starting a process is the platform's time, not the plugin's: only what follows has the call timeout.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill(`the plugin's process did not start within ${BOOT_TIMEOUT_MS} ms`);
        reject(new Error(`the plugin's process did not start within ${BOOT_TIMEOUT_MS} ms`));
      }, BOOT_TIMEOUT_MS);
      this.booted = () => {
        clearTimeout(timer);
        resolve();
      };
      let failure = 'the plugin process stopped while starting';
      worker.once('error', (err: Error) => {
        failure = `the plugin's process failed: ${err.message}`;
      });
      worker.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(this.stderrTail ? this.describeExit(code, signal) : failure));
      });
      this.post({ t: 'start', start: { info, moduleUrl: pathToFileURL(join(dir, main)).href } });
    });
    await this.send('setup', (id) => ({ t: 'setup', id }));
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    // From here the process's end is expected: not a crash to report.
    this.stopping = true;
    try {
      await this.send('teardown', (id) => ({ t: 'teardown', id }));
    } finally {
      this.worker = undefined;
      await terminate(worker);
      this.rejectAll('the plugin was stopped');
    }
  }

  async memoryMb(): Promise<number | null> {
    if (!this.worker) return this.lastMemoryMb;
    try {
      const stats = (await this.send('stats', (id) => ({ t: 'stats', id }), 1000)) as WorkerStats;
      this.lastMemoryMb = Math.round((stats.used_heap_bytes / 1024 / 1024) * 100) / 100;
    } catch {
      // A busy or stopped worker keeps its last measured figure.
    }
    return this.lastMemoryMb;
  }

  /** The function the platform calls to run one of the worker's handlers. */
  invoker(handler: number): (payload: unknown) => Promise<unknown> {
    return (payload) => this.send('handler', (id) => ({ t: 'invoke', id, handler, payload }));
  }

  private send(
    what: string,
    make: (id: number) => ToWorker,
    timeoutMs = this.options.timeoutMs(),
  ): Promise<unknown> {
    const worker = this.worker;
    if (!worker) return Promise.reject(new Error('the plugin worker is not running'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        const timedOut = new PluginTimeoutError(`the plugin's ${what}`, timeoutMs);
        // Stats are only a measurement; anything else means the plugin is stuck. Terminating it is counted
        // as the plugin's failure by the crash, so the call it did not answer is not counted a second time.
        if (what !== 'stats') {
          this.kill(`the plugin's ${what} did not answer within ${timeoutMs} ms; its worker was terminated`);
          markRecorded(timedOut);
        }
        reject(timedOut);
      }, timeoutMs);
      this.waiting.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      try {
        worker.send(make(id), (err) => {
          if (!err) return;
          this.waiting.get(id)?.reject(new Error('the plugin process is not running'));
          this.waiting.delete(id);
        });
      } catch (err) {
        this.waiting.get(id)?.reject(new PluginCallError(toWireError(err)));
        this.waiting.delete(id);
      }
    });
  }

  private receive(m: FromWorker): void {
    const side = this.options.side;
    switch (m.t) {
      case 'booted':
        this.booted?.();
        this.booted = undefined;
        return;
      case 'result': {
        const w = this.waiting.get(m.id);
        this.waiting.delete(m.id);
        if (!w) return;
        if (m.ok) w.resolve(m.value);
        else w.reject(new PluginCallError(m.error));
        return;
      }
      case 'call':
        this.reply(m.id, side.call(m.op, Array.isArray(m.args) ? m.args : []));
        return;
      case 'register':
        this.reply(m.id, side.register(m.registration as Registration, this.invoker(m.handler)));
        return;
      case 'log':
        side.log(m.level, String(m.message), m.fields);
        return;
      case 'health':
        side.health(String(m.status), m.details);
        return;
      case 'denied':
        side.denied(String(m.permission), String(m.what));
        return;
    }
  }

  private reply(id: number, work: Promise<unknown>): void {
    work.then(
      (value) => this.post({ t: 'reply', id, ok: true, value: value ?? null }),
      (err: unknown) => this.post({ t: 'reply', id, ok: false, error: wireOf(err) }),
    );
  }

  private post(message: ToWorker): void {
    // A closed channel is the process's end, which its exit reports; the callback keeps it from throwing.
    const ignore = () => {};
    try {
      this.worker?.send(message, ignore);
    } catch (err) {
      if (message.t === 'reply')
        this.worker?.send({ t: 'reply', id: message.id, ok: false, error: wireOf(err) }, ignore);
    }
  }

  private kill(reason: string): void {
    const worker = this.worker;
    if (!worker) return;
    this.crashed(reason);
    void terminate(worker);
  }

  private crashed(reason: string): void {
    if (this.stopping || !this.worker) return;
    this.stopping = true;
    this.worker = undefined;
    this.rejectAll(reason);
    this.options.onCrash(reason);
  }

  private rejectAll(reason: string): void {
    for (const w of this.waiting.values()) w.reject(new Error(reason));
    this.waiting.clear();
  }

  private describeExit(code: number | null, signal: NodeJS.Signals | null): string {
    if (/heap out of memory|Reached heap limit/i.test(this.stderrTail)) {
      return `the plugin exceeded its memory limit (${this.options.memoryMb} MiB); its process was stopped`;
    }
    const denied = /ERR_ACCESS_DENIED[^\n]*/.exec(this.stderrTail)?.[0];
    if (denied) return `the plugin's process was refused a resource outside its permissions: ${denied}`;
    return signal
      ? `the plugin's process was ended by ${signal}`
      : `the plugin's process exited with code ${code}`;
  }
}

/** Kills a plugin's process and resolves once it has ended. */
function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

function wireOf(err: unknown): WireError {
  return {
    message: err instanceof Error ? err.message : String(err),
    name: err instanceof Error ? err.name : 'Error',
    ...(isRecorded(err) ? { recorded: true as const } : {}),
  };
}
