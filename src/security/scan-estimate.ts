import { type Kysely, sql } from 'kysely';
import type { Tables } from '../storage/tables.js';
import type { ScanStore } from './scan-store.js';
import type { ScanComponent, SecurityCheck } from './security-check.js';

/** How a scan's `estimated_duration_ms` was reached (answered beside it, so a guess never passes as a measure). */
export type EstimateBasis = 'recent_scans' | 'component_counts';

export interface ScanEstimate {
  ms: number;
  basis: EstimateBasis;
}

/** How many recent completed scans the measured estimate averages over. */
const RECENT_SCANS = 10;

/**
 * The a-priori costs used only for checks no recent scan has measured (a fresh platform, or a component never
 * scanned): a check is one or two indexed queries (~2 ms on SQLite or a local PostgreSQL) plus the work on
 * each row it reads, and a scan adds its own bookkeeping (mark running, read the row, store the result).
 */
const PRIOR_CHECK_MS = 2;
const PRIOR_ROW_MS = 0.02;
const PRIOR_SCAN_MS = 5;

/** The tables whose rows a component's checks read (configuration checks read only the configuration). */
const ROWS_READ: Record<ScanComponent, readonly string[]> = {
  configuration: [],
  permissions: ['users', 'api_keys'],
  plugins: ['plugins'],
};

interface MeasuredCheck {
  name?: unknown;
  duration_ms?: unknown;
}

/**
 * Estimates how long a scan of `checks` takes: each check's mean measured duration in the last ten completed
 * scans that ran it, plus those scans' mean bookkeeping time (their duration beyond their checks). A check no
 * recent scan ran is estimated from the rows it will read with the a-priori costs above, and the answer then
 * says `component_counts`.
 */
export async function estimateScan(
  store: ScanStore,
  db: Kysely<Tables>,
  checks: readonly SecurityCheck[],
): Promise<ScanEstimate> {
  const recent = await store.recentCompleted(RECENT_SCANS);
  const measured = new Map<string, number[]>();
  const overheads: number[] = [];
  for (const scan of recent) {
    let inChecks = 0;
    for (const c of JSON.parse(scan.checks) as MeasuredCheck[]) {
      if (typeof c.name !== 'string' || typeof c.duration_ms !== 'number') continue;
      measured.set(c.name, [...(measured.get(c.name) ?? []), c.duration_ms]);
      inChecks += c.duration_ms;
    }
    if (scan.duration_ms !== null) overheads.push(scan.duration_ms - inChecks);
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  let total = overheads.length > 0 ? mean(overheads) : PRIOR_SCAN_MS;
  let basis: EstimateBasis = overheads.length > 0 ? 'recent_scans' : 'component_counts';
  const rows = new Map<ScanComponent, number>();
  for (const check of checks) {
    const durations = measured.get(check.name);
    if (durations && durations.length > 0) {
      total += mean(durations);
      continue;
    }
    basis = 'component_counts';
    if (!rows.has(check.component)) rows.set(check.component, await rowsRead(db, check.component));
    total += PRIOR_CHECK_MS + (rows.get(check.component) ?? 0) * PRIOR_ROW_MS;
  }
  return { ms: Math.max(0, Math.round(total)), basis };
}

async function rowsRead(db: Kysely<Tables>, component: ScanComponent): Promise<number> {
  let count = 0;
  for (const table of ROWS_READ[component]) {
    try {
      const r = await sql<{ n: number | string }>`select count(*) as n from ${sql.table(table)}`.execute(db);
      count += Number(r.rows[0]?.n ?? 0);
    } catch {
      // The plugins table belongs to the plugin manager, which may not be installed: nothing to read then.
    }
  }
  return count;
}
