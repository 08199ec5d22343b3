import type { PlatformConfig } from '../config/config-schema.js';
import type { Database } from '../storage/database.js';
import { createLogStore } from './create-log-store.js';
import { type LineSink, LogOutput } from './log-output.js';
import { LogStoreService } from './log-store-service.js';

/**
 * The logger's destination and the log store behind it, made before the HTTP server so that its first
 * lines are kept too. Close `service` at shutdown, after the last line was logged.
 */
export async function createPlatformLogging(deps: {
  cfg: () => PlatformConfig;
  database: Database;
  stdout?: LineSink | undefined;
}): Promise<{ output: LogOutput; service: LogStoreService }> {
  const cfg = deps.cfg();
  const output = new LogOutput(cfg.logging.level, deps.stdout ?? process.stdout);
  const store = await createLogStore(deps.database, cfg.storage.data_dir);
  const service = new LogStoreService(store, deps.cfg);
  output.attach((line) => service.accept(line));
  return { output, service };
}
