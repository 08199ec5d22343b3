import { randomBytes } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { PlatformConfig } from '../config/config-schema.js';
import { AppError } from '../http/app-error.js';
import { newId, nowIso } from '../kernel/new-id.js';
import type { EventCipher } from './event-cipher.js';
import { assertNesting } from './input-shape.js';
import { isValidPattern } from './pattern-matcher.js';
import { checkPriorityRange } from './priority-range.js';
import type { SubscriptionIndex } from './subscription-index.js';
import type { CreateSubscriptionBody, UpdateSubscriptionBody } from './subscription-schemas.js';
import type { SubscriptionListFilter, SubscriptionRow, SubscriptionStore } from './subscription-store.js';

export type CreateSubscription = Static<typeof CreateSubscriptionBody>;
export type UpdateSubscription = Static<typeof UpdateSubscriptionBody>;

export interface Caller {
  userId: string;
  isAdmin: boolean;
  /** An API key's scopes; a subscription it creates receives only what they let it read. */
  keyScopes?: readonly string[] | undefined;
}

export const SECRET_MASK = '********';
const DEFAULT_RETRY = { max_attempts: 5, retry_delay_seconds: 30, exponential_backoff: true };
const DEFAULT_BATCH = { enabled: false, max_batch_size: 100, max_wait_time_seconds: 5 };

/**
 * Durable subscriptions: ownership (others get 404, admins see all), the per-user limit, validation of
 * patterns and webhook URLs, secrets (generated when omitted, shown once, stored encrypted), and the status
 * moves active ↔ paused by `enabled`. Every change reloads the subscription index on every instance.
 */
export class SubscriptionService {
  constructor(
    private readonly deps: {
      config: () => PlatformConfig;
      store: SubscriptionStore;
      index: SubscriptionIndex;
      cipher: EventCipher;
    },
  ) {}

  /** @returns the stored row and the secret in full (for the creation response only). */
  async create(caller: Caller, input: CreateSubscription): Promise<{ row: SubscriptionRow; secret: string }> {
    checkPatterns(input.event_patterns);
    const url = input.webhook_config.url;
    if (url === undefined) {
      throw new AppError('VALIDATION_ERROR', 'webhook_config.url is required', {
        details: { field: 'webhook_config.url', reason: 'is required' },
      });
    }
    checkUrl(url);
    checkPriorityRange(input.filters?.priority?.min, input.filters?.priority?.max, FILTER_PRIORITY);
    assertNesting('filters.data_filters', input.filters?.data_filters);
    const secret = input.webhook_config.secret ?? randomBytes(24).toString('base64url');
    const now = nowIso();
    const enabled = input.enabled ?? true;
    const row: SubscriptionRow = {
      id: newId('sub'),
      owner_id: caller.userId,
      name: input.name ?? `webhook to ${new URL(url).host}`,
      status: enabled ? 'active' : 'paused',
      event_patterns: JSON.stringify(input.event_patterns),
      filters: JSON.stringify(input.filters ?? {}),
      delivery_method: 'webhook',
      webhook_url: url,
      webhook_secret: this.deps.cipher.seal(secret),
      retry_policy: JSON.stringify({ ...DEFAULT_RETRY, ...(input.webhook_config.retry_policy ?? {}) }),
      timeout_seconds:
        input.webhook_config.timeout_seconds ?? this.deps.config().webhooks.default_timeout_seconds,
      rate_limit: input.webhook_config.rate_limit ?? null,
      batch_config: JSON.stringify({ ...DEFAULT_BATCH, ...(input.batch_config ?? {}) }),
      plugin_id: null,
      reader_scopes: caller.keyScopes === undefined ? null : JSON.stringify(caller.keyScopes),
      events_delivered: 0,
      events_failed: 0,
      consecutive_failures: 0,
      last_delivery: null,
      last_error: null,
      created_at: now,
      updated_at: now,
      previous_secret: null,
      previous_secret_expires_at: null,
      failing_since: null,
      inactive_since: null,
    };
    const limit = this.deps.config().events.max_subscriptions_per_user;
    if (!(await this.deps.store.insertWithinLimit(row, limit))) {
      throw new AppError('SUBSCRIPTION_LIMIT_EXCEEDED', `At most ${limit} subscriptions per user`, {
        details: { limit },
      });
    }
    await this.deps.index.changed();
    return { row, secret };
  }

  async list(caller: Caller, filter: Omit<SubscriptionListFilter, 'ownerId'>): Promise<SubscriptionRow[]> {
    return this.deps.store.list({ ...filter, ownerId: caller.isAdmin ? undefined : caller.userId });
  }

  /** @throws AppError SUBSCRIPTION_NOT_FOUND when it does not exist or belongs to someone else */
  async get(caller: Caller, id: string): Promise<SubscriptionRow> {
    const row = await this.deps.store.findById(id);
    if (!row || (row.owner_id !== caller.userId && !caller.isAdmin)) throw subscriptionNotFound(id);
    return row;
  }

  /**
   * A partial update (PUT and PATCH alike). `enabled: true` brings a paused or failed subscription back; the
   * answer then carries `missedSince`: since when it failed or missed events (what `recover` can send again).
   */
  async update(
    caller: Caller,
    id: string,
    input: UpdateSubscription,
  ): Promise<SubscriptionRow & { missedSince?: string }> {
    const row = await this.get(caller, id);
    if (row.delivery_method === 'plugin') {
      // Delivered to its plugin, not over HTTP: a webhook's settings would be stored and never used.
      for (const field of ['webhook_config', 'batch_config'] as const) {
        if (input[field] === undefined) continue;
        throw new AppError('VALIDATION_ERROR', `${field} does not apply to a plugin's subscription`, {
          details: { field, reason: "does not apply to a plugin's subscription" },
        });
      }
    }
    const changes: Partial<SubscriptionRow> = { updated_at: nowIso() };
    if (input.name !== undefined) changes.name = input.name;
    if (input.event_patterns !== undefined) {
      checkPatterns(input.event_patterns);
      changes.event_patterns = JSON.stringify(input.event_patterns);
    }
    if (input.filters !== undefined) {
      checkPriorityRange(input.filters.priority?.min, input.filters.priority?.max, FILTER_PRIORITY);
      assertNesting('filters.data_filters', input.filters.data_filters);
      changes.filters = JSON.stringify(input.filters);
    }
    let missedSince: string | undefined;
    if (input.enabled !== undefined) {
      changes.status = input.enabled ? 'active' : 'paused';
      if (input.enabled) changes.consecutive_failures = 0;
      if (input.enabled && row.status !== 'active') {
        missedSince = row.failing_since ?? row.inactive_since ?? row.updated_at;
        Object.assign(changes, { failing_since: null, inactive_since: null });
      }
      if (!input.enabled && row.status === 'active') changes.inactive_since = changes.updated_at;
    }
    const wc = input.webhook_config;
    if (wc) {
      if (wc.url !== undefined) {
        checkUrl(wc.url);
        changes.webhook_url = wc.url;
      }
      if (wc.secret !== undefined && wc.secret !== SECRET_MASK) {
        changes.webhook_secret = this.deps.cipher.seal(wc.secret);
        // Replaced outright: a rotation's previous secret stops signing too.
        Object.assign(changes, { previous_secret: null, previous_secret_expires_at: null });
      }
      if (wc.retry_policy !== undefined) {
        changes.retry_policy = JSON.stringify({ ...JSON.parse(row.retry_policy), ...wc.retry_policy });
      }
      if (wc.timeout_seconds !== undefined) changes.timeout_seconds = wc.timeout_seconds;
      if (wc.rate_limit !== undefined) changes.rate_limit = wc.rate_limit;
    }
    if (input.batch_config !== undefined) {
      changes.batch_config = JSON.stringify({ ...JSON.parse(row.batch_config), ...input.batch_config });
    }
    await this.deps.store.update(id, changes);
    await this.deps.index.changed();
    return { ...row, ...changes, ...(missedSince === undefined ? {} : { missedSince }) };
  }

  /**
   * Deletes every subscription of a user (their account was deleted), with their waiting deliveries, as a
   * delete through the API does. Answers how many.
   */
  async deleteOwnedBy(ownerId: string): Promise<number> {
    const rows = await this.deps.store.list({ ownerId });
    let deleted = 0;
    for (const row of rows) if (await this.deps.store.delete(row.id)) deleted += 1;
    if (rows.length > 0) await this.deps.index.changed();
    return deleted;
  }

  /** `webhooksOnly`: through the webhook API, which knows only webhook subscriptions (others are not found). */
  async delete(caller: Caller, id: string, options: { webhooksOnly?: boolean } = {}): Promise<void> {
    const row = await this.get(caller, id);
    if (options.webhooksOnly && row.delivery_method !== 'webhook') throw subscriptionNotFound(id);
    await this.deps.store.delete(id);
    await this.deps.index.changed();
  }
}

function checkPatterns(patterns: readonly string[]): void {
  const bad = patterns.find((p) => !isValidPattern(p));
  if (bad !== undefined) {
    throw new AppError('VALIDATION_ERROR', `'${bad}' is not a valid event pattern`, {
      details: { field: 'event_patterns', reason: 'invalid pattern', value: bad },
    });
  }
}

function checkUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || !parsed.hostname) {
    throw new AppError('VALIDATION_ERROR', 'The webhook URL must be an http or https URL', {
      details: { field: 'webhook_config.url', reason: 'must be an http or https URL' },
    });
  }
  if (parsed.username || parsed.password) {
    throw new AppError('VALIDATION_ERROR', 'The webhook URL must not carry credentials', {
      details: { field: 'webhook_config.url', reason: 'must not contain a user name or password' },
    });
  }
}

const subscriptionNotFound = (id: string) =>
  new AppError('SUBSCRIPTION_NOT_FOUND', `Subscription '${id}' does not exist`, {
    details: { subscription_id: id },
  });

const FILTER_PRIORITY = { min: 'filters.priority.min', max: 'filters.priority.max' };
