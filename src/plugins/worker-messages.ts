import type { CapabilityOp, LogLevel, RealmInfo, Registration, WireError } from './plugin-wire.js';

/** What the plugin's process is started with (its first message). */
export interface WorkerStart {
  info: RealmInfo;
  /** The file URL of the plugin's main module. */
  moduleUrl: string;
}

/** Messages from the platform to a plugin's worker. */
export type ToWorker =
  | { t: 'start'; start: WorkerStart }
  | { t: 'setup'; id: number }
  | { t: 'invoke'; id: number; handler: number; payload: unknown }
  | { t: 'teardown'; id: number }
  | { t: 'stats'; id: number }
  | { t: 'reply'; id: number; ok: true; value: unknown }
  | { t: 'reply'; id: number; ok: false; error: WireError };

/** Messages from a plugin's worker to the platform. */
export type FromWorker =
  /** The entry has its start message: from here on, calls into the plugin are timed. */
  | { t: 'booted' }
  | { t: 'result'; id: number; ok: true; value: unknown }
  | { t: 'result'; id: number; ok: false; error: WireError }
  | { t: 'call'; id: number; op: CapabilityOp; args: unknown[] }
  | { t: 'register'; id: number; registration: Registration; handler: number }
  | { t: 'log'; level: LogLevel; message: string; fields?: Record<string, unknown> }
  | { t: 'health'; status: string; details?: Record<string, unknown> }
  | { t: 'denied'; permission: string; what: string };

/** The worker's own heap, measured inside it (`v8.getHeapStatistics()` of its isolate). */
export interface WorkerStats {
  used_heap_bytes: number;
  total_heap_bytes: number;
}
