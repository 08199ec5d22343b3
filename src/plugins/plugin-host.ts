import type { CapabilityOp, LogLevel, Registration } from './plugin-wire.js';

/** The platform side of one plugin's capabilities, as the host that runs the plugin's code calls them. */
export interface PlatformSide {
  call(op: CapabilityOp, args: unknown[]): Promise<unknown>;
  /** `invoke` runs the plugin's handler with one payload; it rejects with a PluginCallError when that throws. */
  register(registration: Registration, invoke: (payload: unknown) => Promise<unknown>): Promise<void>;
  log(level: LogLevel, message: string, fields: Record<string, unknown> | undefined): void;
  health(status: string, details: Record<string, unknown> | undefined): void;
  denied(permission: string, what: string): void;
}

/**
 * Runs one plugin's code: inline (in this thread) or in a process of its own (`isolation: worker`). Both load the main module, run
 * `setup(ctx)` with the same ctx interface, and run `teardown()` when stopped.
 */
export interface PluginHost {
  readonly isolation: 'inline' | 'worker';
  /** Loads the module and runs setup; rejects when either fails or exceeds the call timeout. */
  start(): Promise<void>;
  /** Runs teardown (bounded by the call timeout) and releases the plugin's process (worker). */
  stop(): Promise<void>;
  /** The plugin's own heap in MiB, or null when it shares the platform's (inline). */
  memoryMb(): Promise<number | null>;
}

/** The error a call gets when the plugin does not answer in time. */
export class PluginTimeoutError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not finish within ${ms} ms`);
    this.name = 'PluginTimeoutError';
  }
}

/** Settles with `promise`, or rejects with PluginTimeoutError after `ms` (the promise itself goes on). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new PluginTimeoutError(what, ms)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
