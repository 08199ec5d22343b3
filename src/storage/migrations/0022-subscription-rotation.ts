import type { Kysely } from 'kysely';

/**
 * Signing-secret rotation and recovery of a subscription (docs/webhooks.md):
 * - `previous_secret` (sealed like `webhook_secret`) still signs deliveries until `previous_secret_expires_at`;
 * - `failing_since`: when the first attempt failed after the last success (null while the target answers), which
 *   `webhooks.disable_after_failing_hours` measures;
 * - `inactive_since`: when it last stopped being active (paused or put in error), so re-enabling it can say
 *   since when it missed events (`missed_since`).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const column of ['previous_secret', 'previous_secret_expires_at', 'failing_since', 'inactive_since']) {
    await db.schema.alterTable('subscriptions').addColumn(column, 'text').execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const column of ['previous_secret', 'previous_secret_expires_at', 'failing_since', 'inactive_since']) {
    await db.schema.alterTable('subscriptions').dropColumn(column).execute();
  }
}
