import type { Migration } from 'kysely';
import * as core from './migrations/0001-core.js';
import * as events from './migrations/0002-events.js';
import * as tasks from './migrations/0003-tasks.js';
import * as metricsLogs from './migrations/0004-metrics-logs.js';
import * as admin from './migrations/0005-admin.js';
import * as backups from './migrations/0006-backups.js';
import * as webhooks from './migrations/0007-webhooks.js';
import * as plugins from './migrations/0008-plugins.js';
import * as eventExpiryIndex from './migrations/0009-event-expiry-index.js';
import * as outboxClaimOrder from './migrations/0010-outbox-claim-order.js';
import * as eventEmitRecord from './migrations/0011-event-emit-record.js';
import * as eventSequence from './migrations/0012-event-sequence.js';
import * as deliveryAudit from './migrations/0013-delivery-audit.js';
import * as usernameCase from './migrations/0014-username-case.js';
import * as eventRollups from './migrations/0015-event-rollups.js';
import * as eventListIndexes from './migrations/0016-event-list-indexes.js';
import * as taskCancellable from './migrations/0017-task-cancellable.js';
import * as subscriptionReaderScopes from './migrations/0018-subscription-reader-scopes.js';
import * as loginLockouts from './migrations/0020-login-lockouts.js';
import * as idempotencyKeys from './migrations/0021-idempotency-keys.js';
import * as subscriptionRotation from './migrations/0022-subscription-rotation.js';
import * as subscriptionRateLimit from './migrations/0023-subscription-rate-limit.js';
import * as eventTraceContext from './migrations/0024-event-trace-context.js';
import * as eventTypes from './migrations/0028-event-types.js';
import * as deliveryAttemptsSubscription from './migrations/0029-delivery-attempts-subscription.js';
import * as eventRollupCompaction from './migrations/0030-event-rollup-compaction.js';
import * as eventIdempotencyRef from './migrations/0031-event-idempotency-ref.js';
import * as eventListReaderColumns from './migrations/0032-event-list-reader-columns.js';
import * as eventRollupKeys from './migrations/0033-event-rollup-keys.js';

/**
 * Every migration, in order. Feature modules add their own file under `storage/migrations/` and a line here;
 * the same migrations run on SQLite and PostgreSQL.
 */
export const migrationList: Record<string, Migration> = {
  '0001-core': core,
  '0002-events': events,
  '0003-tasks': tasks,
  '0004-metrics-logs': metricsLogs,
  '0005-admin': admin,
  '0006-backups': backups,
  '0007-webhooks': webhooks,
  '0008-plugins': plugins,
  '0009-event-expiry-index': eventExpiryIndex,
  '0010-outbox-claim-order': outboxClaimOrder,
  '0011-event-emit-record': eventEmitRecord,
  '0012-event-sequence': eventSequence,
  '0013-delivery-audit': deliveryAudit,
  '0014-username-case': usernameCase,
  '0015-event-rollups': eventRollups,
  '0016-event-list-indexes': eventListIndexes,
  '0017-task-cancellable': taskCancellable,
  '0018-subscription-reader-scopes': subscriptionReaderScopes,
  '0020-login-lockouts': loginLockouts,
  '0021-idempotency-keys': idempotencyKeys,
  '0022-subscription-rotation': subscriptionRotation,
  '0023-subscription-rate-limit': subscriptionRateLimit,
  '0024-event-trace-context': eventTraceContext,
  '0028-event-types': eventTypes,
  '0029-delivery-attempts-subscription': deliveryAttemptsSubscription,
  '0030-event-rollup-compaction': eventRollupCompaction,
  '0031-event-idempotency-ref': eventIdempotencyRef,
  '0032-event-list-reader-columns': eventListReaderColumns,
  '0033-event-rollup-keys': eventRollupKeys,
};
