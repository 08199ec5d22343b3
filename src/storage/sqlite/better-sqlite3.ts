import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

const require = createRequire(import.meta.url);
const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

/**
 * The better-sqlite3 build this Node can run. Version 13 is a Node-API addon: one prebuilt binary for every
 * Node from 22 on, and the only one that survives Node 24.19 and later, where version 12's statements abort
 * the process when the garbage collector frees them (`RemoveEnvironmentCleanupHook: (env) != nullptr`).
 * Version 13 needs Node-API 10, which Node 20 lacks, so Node 20 keeps version 12 (an optional dependency:
 * where it cannot be built, the install goes on without it). The two share one API.
 */
export const SQLITE_DRIVER_MODULE = NODE_MAJOR >= 22 ? 'better-sqlite3-napi' : 'better-sqlite3';

export const SqliteDriver: typeof BetterSqlite3 = require(SQLITE_DRIVER_MODULE);

/** The driver's entry file, for a worker thread that loads it by path. */
export const SQLITE_DRIVER_PATH: string = require.resolve(SQLITE_DRIVER_MODULE);
