import type { SharedState } from '../cluster/shared-state.js';
import type { PlatformConfig } from '../config/config-schema.js';
import type { SecurityAlerts } from './security-alerts.js';

const COUNTER = 'security:server_errors';
const ALERT_LOCK = 'security:server_errors_alert';
const ALERT_EVERY_MS = 60_000;

/**
 * The `server_errors` rule. In cluster mode every 5xx response of every instance adds to one counter in
 * Redis, in fixed windows of `security.server_error_window_minutes`; when the count of the current window
 * reaches `security.server_error_threshold`, an alert is raised, at most once a minute across the cluster
 * while the errors go on. A single instance (embedded mode), or one that cannot reach Redis (which itself
 * causes 5xx), counts its own responses in a sliding window of the same length, so the alert still comes.
 */
export class ServerErrorRule {
  /** Times (ms) of this instance's recent 5xx responses, for counting while the shared state fails. */
  private readonly local: number[] = [];
  private lastLocalAlert = 0;

  constructor(
    private readonly deps: {
      shared: Pick<SharedState, 'kind' | 'hit' | 'tryLock'>;
      alerts: Pick<SecurityAlerts, 'raise'>;
      config: () => PlatformConfig;
    },
  ) {}

  async observe(status: number): Promise<void> {
    const cfg = this.deps.config().security;
    let count: number | undefined;
    let scope: 'shared_state' | 'this_instance' = 'shared_state';
    let unreachable = false;
    if (this.deps.shared.kind !== 'memory') {
      try {
        count = (await this.deps.shared.hit(COUNTER, cfg.server_error_window_minutes * 60)).count;
      } catch {
        unreachable = true;
      }
    }
    if (count === undefined) {
      scope = 'this_instance';
      count = this.countLocally(cfg.server_error_window_minutes, cfg.server_error_threshold);
    }
    if (count < cfg.server_error_threshold || !(await this.mayAlert(scope))) return;
    await this.deps.alerts.raise({
      type: 'server_errors',
      severity: 'medium',
      title: 'Many server errors',
      description: `${count} responses with a 5xx status within ${cfg.server_error_window_minutes} minutes ${
        scope === 'shared_state'
          ? 'across the instances'
          : unreachable
            ? 'on one instance (the shared counter was unreachable)'
            : 'on this instance'
      } (threshold ${cfg.server_error_threshold}): something is failing, or being probed.`,
      affectedResources: ['service:http'],
      metadata: {
        server_errors: count,
        window_minutes: cfg.server_error_window_minutes,
        last_status: status,
        counted_in: scope,
      },
      dedupeKey: 'server_errors',
    });
  }

  private countLocally(windowMinutes: number, threshold: number): number {
    const now = Date.now();
    this.local.push(now);
    while ((this.local[0] ?? now) < now - windowMinutes * 60_000) this.local.shift();
    if (this.local.length > threshold) this.local.shift();
    return this.local.length;
  }

  /** Once a minute: cluster-wide through a lock left to expire, else per instance. */
  private async mayAlert(scope: 'shared_state' | 'this_instance'): Promise<boolean> {
    if (scope === 'shared_state') {
      try {
        return (await this.deps.shared.tryLock(ALERT_LOCK, ALERT_EVERY_MS)) !== undefined;
      } catch {
        // Unreachable since the count: decide as one instance.
      }
    }
    const now = Date.now();
    if (now - this.lastLocalAlert < ALERT_EVERY_MS) return false;
    this.lastLocalAlert = now;
    return true;
  }
}
