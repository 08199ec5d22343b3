import { cronProblem } from '../tasks/cron-pattern.js';
import type { PlatformConfig } from './config-schema.js';
import type { ConfigProblem } from './config-tree.js';

/**
 * The settings that hold a cron expression for the scheduler; `optional` ones may be empty (no job at all).
 * Their values are read with the scheduler's own parser, so a value accepted here is one it can run.
 */
export const CRON_SETTINGS: readonly { key: string; optional: boolean }[] = [
  { key: 'events.retention_schedule', optional: false },
  { key: 'events.rollup_compaction_schedule', optional: false },
  { key: 'tasks.cleanup_schedule', optional: false },
  { key: 'backups.schedule', optional: true },
];

/** A problem for each cron setting of `config` the scheduler could not run. */
export function cronSettingProblems(config: PlatformConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const { key, optional } of CRON_SETTINGS) {
    const [section, name] = key.split('.') as [string, string];
    const value = (config as unknown as Record<string, Record<string, unknown>>)[section]?.[name];
    if (typeof value !== 'string' || (optional && value.trim() === '')) continue;
    const problem = cronProblem(value.trim());
    if (problem) problems.push({ field: key, reason: `is not a valid cron expression: ${problem}` });
  }
  return problems;
}
