import type { AuditLog } from './audit/audit-log.js';
import type { AuthService } from './auth/auth-service.js';
import type { CacheService } from './cache/cache-service.js';
import type { SharedState } from './cluster/shared-state.js';
import type { PlatformConfig } from './config/config-schema.js';
import type { ConfigService } from './config/config-service.js';
import type { App } from './http/app-type.js';
import type { PlatformEvents } from './kernel/platform-events.js';
import type { ServiceRegistry } from './kernel/service-registry.js';
import type { Database } from './storage/database.js';
import type { Maintenance } from './system/maintenance.js';
import type { SystemStateStore } from './system/system-state-store.js';
import type { Scheduler } from './tasks/scheduler.js';
import type { TaskRunner } from './tasks/task-runner.js';
import type { Tracing } from './tracing/tracing.js';
import type { UserStore } from './users/user-store.js';

/**
 * What the composition root hands each feature module: the core collaborators every module may use.
 * Modules take what they need from it and receive anything more specific (another module's service) explicitly.
 */
export interface PlatformContext {
  readonly app: App;
  /** The current effective configuration (frozen; replaced whole on every change). */
  readonly cfg: () => PlatformConfig;
  readonly config: ConfigService;
  readonly database: Database;
  readonly shared: SharedState;
  readonly registry: ServiceRegistry;
  readonly events: PlatformEvents;
  readonly audit: AuditLog;
  readonly auth: AuthService;
  readonly users: UserStore;
  readonly systemState: SystemStateStore;
  readonly maintenance: Maintenance;
  /** The cache service: namespaces, the L1 views for per-request lookups, statistics and clearing. */
  readonly cache: CacheService;
  /** Durable background tasks: register a type, start, cancel (docs/operations.md). */
  readonly tasks: TaskRunner;
  /** Recurring jobs from cron expressions, one instance per occurrence in a cluster. */
  readonly scheduler: Scheduler;
  /** Trace context of events, and spans exported over OTLP when configured (docs/tracing.md). */
  readonly tracing: Tracing;
  /** Closers run at shutdown after the HTTP server and services stopped, last registered first. */
  readonly onClose: (fn: () => Promise<void> | void) => void;
}
