import type { Kysely } from 'kysely';
import type { PlatformConfig } from '../config/config-schema.js';
import type { PlatformEvents } from '../kernel/platform-events.js';
import type { MailMessage } from '../mail/mail-message.js';
import type { Mailer } from '../mail/mailer.js';
import type { Tables } from '../storage/tables.js';

/** The platform event raised when the dispatcher puts a subscription in error (docs/events.md). */
export const SUBSCRIPTION_DISABLED = 'webhook.subscription.disabled';

type Reason = 'target_gone' | 'failing_too_long' | 'consecutive_failures';

/**
 * Says that the dispatcher put subscriptions in `error`: one `webhook.subscription.disabled` platform event each
 * and an e-mail to its owner (a user; a plugin's subscription has none). Called by the instance whose write
 * moved them, so once per move.
 */
export class SubscriptionDisabledNotice {
  constructor(
    private readonly deps: {
      db: Kysely<Tables>;
      cfg: () => PlatformConfig;
      events: PlatformEvents;
      mailer: Mailer;
      reportError: (err: unknown) => void;
    },
  ) {}

  async notify(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    const rows = await this.deps.db
      .selectFrom('subscriptions')
      .leftJoin('users', 'users.id', 'subscriptions.owner_id')
      .select([
        'subscriptions.id',
        'subscriptions.name',
        'subscriptions.owner_id',
        'subscriptions.delivery_method',
        'subscriptions.consecutive_failures',
        'subscriptions.failing_since',
        'subscriptions.last_error',
        'subscriptions.inactive_since',
        'users.email',
        'users.username',
        'users.full_name',
      ])
      .where('subscriptions.id', 'in', ids)
      .where('subscriptions.status', '=', 'error')
      .execute();
    const hours = this.deps.cfg().webhooks.disable_after_failing_hours;
    for (const row of rows) {
      const reason = reasonOf(row, hours);
      const data = {
        subscription_id: row.id,
        name: row.name,
        owner_id: row.owner_id,
        delivery_method: row.delivery_method,
        reason,
        failing_since: row.failing_since,
        consecutive_failures: row.consecutive_failures,
        last_error: row.last_error,
        disabled_at: row.inactive_since,
      };
      this.deps.events.announce(SUBSCRIPTION_DISABLED, 'system', data);
      if (row.email) {
        // Not waited for: the caller is the delivery recorder, whose next writes (every subscription's results)
        // must not wait for a slow or unreachable SMTP server. The mailer sends it before it stops.
        this.deps.mailer.queue(
          disabledMail(
            { email: row.email, username: row.username ?? '', full_name: row.full_name ?? '' },
            data,
          ),
          this.deps.reportError,
        );
      }
    }
  }
}

function reasonOf(
  row: { last_error: string | null; failing_since: string | null; inactive_since: string | null },
  hours: number,
): Reason {
  if (row.last_error?.includes('410 Gone')) return 'target_gone';
  const since = row.failing_since === null ? Number.NaN : Date.parse(row.failing_since);
  const at = row.inactive_since === null ? Date.now() : Date.parse(row.inactive_since);
  if (hours > 0 && at - since >= hours * 3_600_000) return 'failing_too_long';
  return 'consecutive_failures';
}

const REASONS: Record<Reason, string> = {
  target_gone: 'its target answered 410 Gone',
  failing_too_long: 'its target has failed every delivery attempt',
  consecutive_failures: 'too many deliveries in a row failed after all their retries',
};

function disabledMail(
  u: { email: string; username: string; full_name: string },
  d: {
    subscription_id: string;
    name: string;
    reason: Reason;
    failing_since: string | null;
    last_error: string | null;
  },
): MailMessage {
  return {
    kind: 'subscription_disabled',
    to: u.email,
    subject: `Webhook subscription paused: ${d.name}`,
    text: [
      `Hello ${u.full_name || u.username},`,
      '',
      `Your webhook subscription "${d.name}" (${d.subscription_id}) was put in status error: ${REASONS[d.reason]}.`,
      ...(d.failing_since ? [`Its deliveries have been failing since ${d.failing_since}.`] : []),
      ...(d.last_error ? [`Last error: ${d.last_error}`] : []),
      '',
      'Nothing is delivered to it until it is enabled again (PATCH /api/v1/events/subscriptions/' +
        `${d.subscription_id} with {"enabled": true}); the answer's missed_since is where`,
      `POST /api/v1/events/subscriptions/${d.subscription_id}/recover can send again what failed or was missed.`,
    ].join('\n'),
  };
}
