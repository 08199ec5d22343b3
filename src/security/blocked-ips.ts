import type { BlockList } from 'node:net';
import type { Kysely, Selectable } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import { AppError } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { BlockedIpsTable, Tables } from '../storage/tables.js';
import { buildBlockList, type IpRange, matches, parseCidr } from './ip-ranges.js';

export type BlockedIpRow = Selectable<BlockedIpsTable>;
const CHANNEL = 'blocked_ips.changed';

/** Parses an address or range given by a client; a clear VALIDATION_ERROR when it is neither. */
export function parseRangeInput(value: string, field = 'ip_address'): IpRange {
  const parsed = parseCidr(value);
  if (!parsed) {
    throw new AppError('VALIDATION_ERROR', `${field} must be an IPv4 or IPv6 address or CIDR range`, {
      details: { field, reason: 'not an address or CIDR range' },
    });
  }
  return parsed;
}

/**
 * Blocked addresses and ranges. The list is held in memory for the per-request check, rebuilt when any
 * instance changes it, and re-read each minute as a safety net; expiry is checked on every request.
 */
export class BlockedIps {
  private list: BlockList = buildBlockList([]);
  private rules: { row: BlockedIpRow; list: BlockList }[] = [];
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Kysely<Tables>,
    private readonly shared: SharedState,
  ) {}

  async start(): Promise<void> {
    await this.refresh();
    this.unsubscribe = this.shared.subscribe(CHANNEL, () => void this.refresh().catch(() => {}));
    this.timer = setInterval(() => void this.refresh().catch(() => {}), 60_000);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
  }

  /** The rule that blocks this address now, if any. */
  find(ip: string): BlockedIpRow | undefined {
    if (this.rules.length === 0 || !matches(this.list, ip)) return undefined;
    const now = nowIso();
    return this.rules.find((r) => inForce(r.row, now) && matches(r.list, ip))?.row;
  }

  /** The rules in force now, newest first. */
  entries(): BlockedIpRow[] {
    const now = nowIso();
    return this.rules.map((r) => r.row).filter((r) => inForce(r, now));
  }

  /** Adds a rule, or replaces the reason and expiry of the rule for the same range. */
  async block(input: {
    range: IpRange;
    reason: string;
    durationHours: number;
    actor: string;
  }): Promise<{ row: BlockedIpRow; created: boolean }> {
    const { cidr } = input.range;
    const row: BlockedIpRow = {
      id: newId('blk'),
      cidr,
      reason: input.reason,
      created_at: nowIso(),
      created_by: input.actor,
      expires_at:
        input.durationHours > 0 ? new Date(Date.now() + input.durationHours * 3_600_000).toISOString() : null,
    };
    // A block whose time ran out is not in force: blocking the range again creates a block (201).
    const existing = await this.db
      .selectFrom('blocked_ips')
      .select('expires_at')
      .where('cidr', '=', cidr)
      .executeTakeFirst();
    await this.db
      .insertInto('blocked_ips')
      .values(row)
      .onConflict((oc) =>
        oc.column('cidr').doUpdateSet({
          reason: row.reason,
          expires_at: row.expires_at,
          created_by: row.created_by,
          created_at: row.created_at,
        }),
      )
      .execute();
    await this.changed();
    const stored = await this.db
      .selectFrom('blocked_ips')
      .selectAll()
      .where('cidr', '=', cidr)
      .executeTakeFirst();
    return { row: stored ?? row, created: existing === undefined || !inForce(existing, row.created_at) };
  }

  /** Removes the rule for exactly this range; false when there is none in force (one that ran out is dropped). */
  async unblock(range: IpRange): Promise<boolean> {
    const now = nowIso();
    const removed = await this.db
      .deleteFrom('blocked_ips')
      .where('cidr', '=', range.cidr)
      .returning('expires_at')
      .execute();
    if (removed.length > 0) await this.changed();
    return removed.some((r) => inForce(r, now));
  }

  private async changed(): Promise<void> {
    await this.refresh();
    await this.shared.publish(CHANNEL, {});
  }

  private async refresh(): Promise<void> {
    const now = nowIso();
    const rows = await this.db
      .selectFrom('blocked_ips')
      .selectAll()
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .orderBy('created_at', 'desc')
      .execute();
    this.rules = rows.map((row) => ({ row, list: buildBlockList([row.cidr]) }));
    this.list = buildBlockList(rows.map((r) => r.cidr));
  }
}

/** A rule is in force until its `expires_at` (for good when it has none). */
const inForce = (row: Pick<BlockedIpRow, 'expires_at'>, now: string): boolean =>
  row.expires_at === null || row.expires_at > now;
