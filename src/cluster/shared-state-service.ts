import type { PlatformService, ServiceHealth } from '../kernel/service.js';
import { withDeadline } from '../kernel/with-deadline.js';
import type { SharedState } from './shared-state.js';

/** A health check waits this long for the backend: connected but not answering (paused, overloaded) is a failure. */
export const HEALTH_PING_TIMEOUT_MS = 1000;

/** Reports the shared-state backend (memory or Redis) as a platform service. */
export class SharedStateService implements PlatformService {
  readonly name = 'cluster_state';
  readonly type = 'coordination';
  readonly dependencies = [] as const;
  private lastPingMs = 0;

  constructor(private readonly shared: SharedState) {}

  async start(): Promise<void> {
    this.lastPingMs = await this.shared.ping();
  }

  async stop(): Promise<void> {}

  async health(): Promise<ServiceHealth> {
    try {
      this.lastPingMs = await withDeadline(this.shared.ping(), HEALTH_PING_TIMEOUT_MS, 'the shared state');
      return {
        status: 'healthy',
        checks: [
          { name: 'connectivity', status: 'pass', response_time_ms: Math.round(this.lastPingMs * 100) / 100 },
        ],
        details: { backend: this.shared.kind },
      };
    } catch (err) {
      return {
        status: 'unhealthy',
        checks: [{ name: 'connectivity', status: 'fail', error: (err as Error).message }],
      };
    }
  }

  metrics(): Record<string, number> {
    return { response_time_ms: Math.round(this.lastPingMs * 100) / 100 };
  }

  settings(): Record<string, unknown> {
    return { backend: this.shared.kind };
  }
}
