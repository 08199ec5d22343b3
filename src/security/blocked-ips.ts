import type { BlockList } from 'node:net';
import type { Kysely, Selectable } from 'kysely';
import type { SharedState } from '../cluster/shared-state.js';
import { AppError } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { BlockedIpsTable, Tables } from '../storage/tables.js';
import { buildBlockList, matches, parseCidr } from './ip-ranges.js';

export type BlockedIpRow = Selectable<BlockedIpsTable>;
const CHANNEL = 'blocked_ips.changed';

/**
 * Blocked addresses and ranges. The list is held in memory for the per-request check, rebuilt when any
 * instance changes it, and re-read each minute so expiries take effect.
 */
export class BlockedIps {
  private list: BlockList = buildBlockList([]);
  private rows: BlockedIpRow[] = [];
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

  /** The rule that blocks this address, if any. */
  find(ip: string): BlockedIpRow | undefined {
    if (this.rows.length === 0 || !matches(this.list, ip)) return undefined;
    const now = nowIso();
    return this.rows.find(
      (r) => (r.expires_at === null || r.expires_at > now) && matches(buildBlockList([r.cidr]), ip),
    );
  }

  entries(): BlockedIpRow[] {
    return this.rows;
  }

  async block(input: {
    cidr: string;
    reason: string;
    durationHours: number;
    actor: string;
  }): Promise<BlockedIpRow> {
    const parsed = parseCidr(input.cidr);
    if (!parsed) {
      throw new AppError('VALIDATION_ERROR', 'ip_address must be an IPv4 or IPv6 address or CIDR range', {
        details: { field: 'ip_address', reason: 'not an address or range' },
      });
    }
    const cidr = `${parsed.address}/${parsed.prefix}`;
    const row: BlockedIpRow = {
      id: newId('blk'),
      cidr,
      reason: input.reason,
      created_at: nowIso(),
      created_by: input.actor,
      expires_at:
        input.durationHours > 0 ? new Date(Date.now() + input.durationHours * 3_600_000).toISOString() : null,
    };
    await this.db
      .insertInto('blocked_ips')
      .values(row)
      .onConflict((oc) =>
        oc
          .column('cidr')
          .doUpdateSet({ reason: row.reason, expires_at: row.expires_at, created_by: row.created_by }),
      )
      .execute();
    await this.changed();
    return (
      (await this.db.selectFrom('blocked_ips').selectAll().where('cidr', '=', cidr).executeTakeFirst()) ?? row
    );
  }

  async unblock(cidrOrIp: string): Promise<boolean> {
    const parsed = parseCidr(cidrOrIp);
    if (!parsed) return false;
    const r = await this.db
      .deleteFrom('blocked_ips')
      .where('cidr', '=', `${parsed.address}/${parsed.prefix}`)
      .executeTakeFirst();
    await this.changed();
    return Number(r.numDeletedRows) > 0;
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
    this.rows = rows;
    this.list = buildBlockList(rows.map((r) => r.cidr));
  }
}
