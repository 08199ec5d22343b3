import { type ResourceLimits, Worker } from 'node:worker_threads';
import type { WorkerProgram } from '../kernel/worker-entry.js';

/** How a backup's worker thread ends: its result, or its error (message, name, code and stack). */
export type WorkerEnd<T> =
  | { t: 'done'; result: T }
  | { t: 'failed'; message: string; name: string; code: string | undefined; stack: string | undefined };

/** The message a worker posts for an error it caught, so that the caller rejects with the same one. */
export function failureOf(err: unknown): WorkerEnd<never> {
  const e = err instanceof Error ? err : new Error(String(err));
  return {
    t: 'failed',
    message: e.message,
    name: e.name,
    code: (e as NodeJS.ErrnoException).code,
    stack: e.stack,
  };
}

/**
 * Runs a backup's worker thread (the table dump, the archive's packing) to its end: resolves to the result it
 * posts, rejects with the error it posts (same message and code), with the worker's own error (an uncaught one,
 * or ERR_WORKER_OUT_OF_MEMORY at its heap's limit), or with the signal's reason once aborted (the worker is
 * terminated). It settles only once the worker has exited, so nothing writes into the files the caller is about
 * to remove. Messages other than its end go to `onMessage` (progress).
 */
export function runBackupWorker<T, M extends { t: string }>(
  program: WorkerProgram,
  options: {
    workerData: unknown;
    resourceLimits: ResourceLimits;
    signal?: AbortSignal | undefined;
    onMessage?: ((message: M) => void) | undefined;
  },
): Promise<T> {
  const { signal, workerData, resourceLimits } = options;
  signal?.throwIfAborted();
  const worker =
    'file' in program
      ? new Worker(program.file, { workerData, resourceLimits })
      : new Worker(program.code, { eval: true, workerData, resourceLimits });
  return new Promise<T>((resolve, reject) => {
    // How the call ends, decided by the first of: the result, an error, the abort.
    let outcome: (() => void) | undefined;
    const finish = (fn: () => void) => {
      if (outcome) return;
      outcome = fn;
      void worker.terminate();
    };
    const aborted = () => finish(() => reject(signal?.reason));
    signal?.addEventListener('abort', aborted, { once: true });
    worker.on('message', (message: WorkerEnd<T> | M) => {
      if (message.t === 'done') finish(() => resolve((message as { result: T }).result));
      else if (message.t === 'failed') {
        const m = message as Extract<WorkerEnd<T>, { t: 'failed' }>;
        const err = Object.assign(new Error(m.message), m.code ? { code: m.code } : {});
        err.name = m.name;
        if (m.stack) err.stack = m.stack;
        finish(() => reject(err));
      } else options.onMessage?.(message as M);
    });
    worker.on('error', (err) => finish(() => reject(err)));
    worker.on('exit', (code) => {
      signal?.removeEventListener('abort', aborted);
      (outcome ?? (() => reject(new Error(`the backup's worker stopped (exit code ${code})`))))();
    });
  });
}
