import { getHeapStatistics } from 'node:v8';
import { createPluginContext } from './plugin-context.js';
import {
  type CapabilityOp,
  type ContextPort,
  fromWireError,
  type Registration,
  toWireError,
} from './plugin-wire.js';
import type { PluginDefinition } from './sdk.js';
import type { FromWorker, ToWorker, WorkerStart, WorkerStats } from './worker-messages.js';

/*
 * The entry of a plugin's own process (`isolation: worker`, started by WorkerHost under Node's permission
 * model): loads the plugin's module, builds its ctx over the IPC channel, and answers the platform's calls
 * (setup, handler invocations, teardown, heap statistics).
 */

const send = process.send?.bind(process);
if (!send) throw new Error('plugin-worker runs only as a child process with an IPC channel');
let start: WorkerStart | undefined;
const handlers = new Map<number, (payload: unknown) => unknown>();
const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
const registrations: Promise<void>[] = [];
let nextId = 1;
let definition: PluginDefinition | undefined;

/** Throws when a value cannot be cloned (a function, a class instance with private state). */
function post(message: FromWorker): void {
  // A closed channel means the platform is gone: `disconnect` ends the process; the callback keeps it quiet.
  send?.(message, undefined, undefined, () => {});
}

function notify(message: FromWorker): void {
  try {
    post(message);
  } catch {
    // A log line or health report that cannot be cloned is dropped; the plugin's work goes on.
  }
}

type Request =
  | { t: 'call'; op: CapabilityOp; args: unknown[] }
  | { t: 'register'; registration: Registration; handler: number };

function request(message: Request): Promise<unknown> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    try {
      post({ ...message, id });
    } catch (err) {
      waiting.delete(id);
      reject(err as Error);
    }
  });
}

const ctxPort: ContextPort = {
  call: (op, args) => request({ t: 'call', op, args }),
  register: (registration, handler) => {
    const handlerId = nextId++;
    handlers.set(handlerId, handler);
    const done = request({ t: 'register', registration, handler: handlerId }).then(() => undefined);
    done.catch(() => {});
    registrations.push(done);
    return done;
  },
  log: (level, message, fields) => notify({ t: 'log', level, message, ...(fields ? { fields } : {}) }),
  health: (status, details) => notify({ t: 'health', status, ...(details ? { details } : {}) }),
  denied: (permission, what) => notify({ t: 'denied', permission, what }),
};

async function answer(id: number, work: () => unknown): Promise<void> {
  try {
    post({ t: 'result', id, ok: true, value: await work() });
  } catch (err) {
    post({ t: 'result', id, ok: false, error: toWireError(err) });
  }
}

process.on('message', (message: ToWorker) => {
  switch (message.t) {
    case 'start':
      start = message.start;
      post({ t: 'booted' });
      return;
    case 'setup':
      void answer(message.id, async () => {
        if (!start) throw new Error('the plugin process has no start message');
        const mod = (await import(start.moduleUrl)) as { default?: PluginDefinition };
        definition = mod.default;
        if (!definition || typeof definition.setup !== 'function') {
          throw new Error('the main module has no default export with a setup(ctx) function');
        }
        await definition.setup(createPluginContext(start.info, ctxPort));
        await Promise.all(registrations);
        return null;
      });
      return;
    case 'invoke': {
      const handler = handlers.get(message.handler);
      void answer(message.id, () => {
        if (!handler) throw new Error(`no handler ${message.handler}`);
        return handler(message.payload);
      });
      return;
    }
    case 'teardown':
      void answer(message.id, async () => {
        await definition?.teardown?.();
        return null;
      });
      return;
    case 'stats':
      void answer(message.id, () => {
        const heap = getHeapStatistics();
        return {
          used_heap_bytes: heap.used_heap_size,
          total_heap_bytes: heap.total_heap_size,
        } satisfies WorkerStats;
      });
      return;
    case 'reply': {
      const w = waiting.get(message.id);
      waiting.delete(message.id);
      if (!w) return;
      if (message.ok) w.resolve(message.value);
      else w.reject(fromWireError(message.error));
      return;
    }
  }
});

// The platform gone (its channel closed, even by a crash): nothing is left to serve.
process.on('disconnect', () => process.exit(0));
