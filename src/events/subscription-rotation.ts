import { randomBytes } from 'node:crypto';
import { AppError } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { EventCipher } from './event-cipher.js';
import type { SubscriptionIndex } from './subscription-index.js';
import type { Caller, SubscriptionService } from './subscription-service.js';
import type { SubscriptionRow, SubscriptionStore } from './subscription-store.js';

export const DEFAULT_OVERLAP_HOURS = 24;

export interface RotatedSecret {
  row: SubscriptionRow;
  /** The new secret, only when the platform generated it. */
  generated: string | undefined;
  previousExpiresAt: string | null;
}

/**
 * Rotation of a webhook subscription's signing secret without downtime: the new secret signs from now on, and
 * the one it replaces keeps signing too (a second signature on every delivery) until the overlap ends, so a
 * receiver can switch at its pace. Only one previous secret is kept: rotating again during an overlap ends
 * the older one's. The replaced secret is never shown.
 */
export class SecretRotation {
  constructor(
    private readonly deps: {
      subscriptions: SubscriptionService;
      store: SubscriptionStore;
      index: SubscriptionIndex;
      cipher: EventCipher;
    },
  ) {}

  /** @throws AppError SUBSCRIPTION_NOT_FOUND, VALIDATION_ERROR (a plugin's subscription has no secret) */
  async rotate(
    caller: Caller,
    id: string,
    input: { secret?: string | undefined; overlap_hours?: number | undefined },
  ): Promise<RotatedSecret> {
    const row = await this.deps.subscriptions.get(caller, id);
    if (row.delivery_method !== 'webhook' || row.webhook_secret === null) {
      throw new AppError('VALIDATION_ERROR', "A plugin's subscription has no signing secret", {
        details: { field: 'subscription_id', reason: 'not a webhook subscription' },
      });
    }
    const generated = input.secret === undefined ? randomBytes(24).toString('base64url') : undefined;
    const secret = input.secret ?? generated!;
    const overlapHours = input.overlap_hours ?? DEFAULT_OVERLAP_HOURS;
    const now = nowIso();
    const previousExpiresAt =
      overlapHours > 0 ? new Date(Date.parse(now) + overlapHours * 3_600_000).toISOString() : null;
    const changes: Partial<SubscriptionRow> = {
      webhook_secret: this.deps.cipher.seal(secret),
      previous_secret: previousExpiresAt === null ? null : row.webhook_secret,
      previous_secret_expires_at: previousExpiresAt,
      updated_at: now,
    };
    await this.deps.store.update(row.id, changes);
    // Every instance's dispatcher reloads its subscriptions: the next delivery is signed with both.
    await this.deps.index.changed();
    return { row: { ...row, ...changes }, generated, previousExpiresAt };
  }
}
