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
};
