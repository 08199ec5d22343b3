import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { type PlatformSide, type PluginHost, PluginTimeoutError } from './plugin-host.js';
import {
  isRecorded,
  PluginCallError,
  type Registration,
  toWireError,
  type WireError,
} from './plugin-wire.js';
import type { FromWorker, ToWorker, WorkerStart, WorkerStats } from './worker-messages.js';

// From the sources (tests, `npm run dev`) the worker's TypeScript entry is loaded through tsx.
const ENTRY = new URL(`./plugin-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

function spawn(start: WorkerStart, memoryMb: number): Worker {
  const resourceLimits = {
    maxOldGenerationSizeMb: memoryMb,
    maxYoungGenerationSizeMb: Math.max(4, Math.ceil(memoryMb / 8)),
  };
  if (ENTRY.pathname.endsWith('.js')) return new Worker(ENTRY, { workerData: start, resourceLimits });
  // Resolved here, not in the worker, so it does not depend on the working folder.
  const tsx = pathToFileURL(
    join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs'),
  ).href;
  const boot = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(ENTRY.href)}); });`;
  return new Worker(boot, { eval: true, workerData: start, resourceLimits });
}

const BOOT_TIMEOUT_MS = 60_000;

/**
 * Runs a plugin in a worker thread with a heap limit (`plugins.worker_memory_mb`), behind the same ctx
 * interface as inline plugins, by message passing. Every call into the plugin (setup, a route, an event, a
 * task, teardown) has the call timeout: a plugin that does not answer in time — an endless loop, say — has its
 * worker terminated, and `onCrash` tells the platform, which marks the plugin `error`.
 */
export class WorkerHost implements PluginHost {
  readonly isolation = 'worker';
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private stopping = false;
  private lastMemoryMb: number | null = null;
  private booted: (() => void) | undefined;

  constructor(
    private readonly options: {
      dir: string;
      main: string;
      info: WorkerStart['info'];
      side: PlatformSide;
      timeoutMs: () => number;
      memoryMb: number;
      /** The worker died or was stopped for not answering: the plugin cannot serve until it is loaded again. */
      onCrash: (reason: string) => void;
    },
  ) {}

  async start(): Promise<void> {
    const { dir, main, info } = this.options;
    const worker = spawn({ info, moduleUrl: pathToFileURL(join(dir, main)).href }, this.options.memoryMb);
    this.worker = worker;
    worker.on('message', (m: FromWorker) => this.receive(m));
    worker.on('error', (err: Error) => this.crashed(this.describe(err)));
    worker.on('exit', (code) => this.crashed(`the worker exited with code ${code}`));
    // Starting a thread is the platform's time, not the plugin's: only what follows has the call timeout.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill(`the plugin's worker did not start within ${BOOT_TIMEOUT_MS} ms`);
        reject(new Error(`the plugin's worker did not start within ${BOOT_TIMEOUT_MS} ms`));
      }, BOOT_TIMEOUT_MS);
      this.booted = () => {
        clearTimeout(timer);
        resolve();
      };
      let failure = 'the plugin worker stopped while starting';
      worker.once('error', (err: Error) => {
        failure = this.describe(err);
      });
      worker.once('exit', () => {
        clearTimeout(timer);
        reject(new Error(failure));
      });
    });
    await this.send('setup', (id) => ({ t: 'setup', id }));
  }

  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    // From here the worker's end is expected: not a crash to report.
    this.stopping = true;
    try {
      await this.send('teardown', (id) => ({ t: 'teardown', id }));
    } finally {
      this.worker = undefined;
      await worker.terminate();
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
        reject(new PluginTimeoutError(`the plugin's ${what}`, timeoutMs));
        // Stats are only a measurement; anything else means the plugin is stuck.
        if (what !== 'stats')
          this.kill(`the plugin's ${what} did not answer within ${timeoutMs} ms; its worker was terminated`);
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
        worker.postMessage(make(id));
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
    try {
      this.worker?.postMessage(message);
    } catch (err) {
      if (message.t === 'reply')
        this.worker?.postMessage({ t: 'reply', id: message.id, ok: false, error: wireOf(err) });
    }
  }

  private kill(reason: string): void {
    const worker = this.worker;
    if (!worker) return;
    this.crashed(reason);
    void worker.terminate();
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

  private describe(err: Error): string {
    const code = (err as { code?: string }).code;
    return code === 'ERR_WORKER_OUT_OF_MEMORY'
      ? `the plugin exceeded its memory limit (${this.options.memoryMb} MiB); its worker was stopped`
      : `the plugin's worker failed: ${err.message}`;
  }
}

function wireOf(err: unknown): WireError {
  return {
    message: err instanceof Error ? err.message : String(err),
    name: err instanceof Error ? err.name : 'Error',
    ...(isRecorded(err) ? { recorded: true as const } : {}),
  };
}
