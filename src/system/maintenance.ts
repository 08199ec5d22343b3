import type { SharedState } from '../cluster/shared-state.js';
import { nowIso } from '../kernel/new-id.js';
import type { SystemStateStore } from './system-state-store.js';

export interface MaintenanceState {
  enabled: boolean;
  message: string;
  estimated_duration_minutes: number | null;
  estimated_end: string | null;
  allow_admin_access: boolean;
  started_at: string | null;
  updated_by: string | null;
}

const KEY = 'maintenance';
const CHANNEL = 'maintenance.changed';
const OFF: MaintenanceState = {
  enabled: false,
  message: '',
  estimated_duration_minutes: null,
  estimated_end: null,
  allow_admin_access: true,
  started_at: null,
  updated_by: null,
};

/** Maintenance mode, stored in the database and announced so every instance gates requests alike. */
export class Maintenance {
  private state: MaintenanceState = OFF;
  private unsubscribe: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Bumped by every live change, so a slower database re-read never overwrites a newer state. */
  private generation = 0;

  constructor(
    private readonly store: SystemStateStore,
    private readonly shared: SharedState,
  ) {}

  async start(): Promise<void> {
    await this.reload();
    this.unsubscribe = this.shared.subscribe(CHANNEL, (m) => {
      this.generation++;
      this.state = m as MaintenanceState;
    });
    // A safety net for an announcement lost while the connection to Redis was down.
    this.timer = setInterval(() => void this.reload().catch(() => {}), 30_000);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
  }

  private async reload(): Promise<void> {
    const generation = this.generation;
    const stored = (await this.store.get<MaintenanceState>(KEY)) ?? OFF;
    if (generation === this.generation) this.state = stored;
  }

  current(): MaintenanceState {
    return this.state;
  }

  async set(
    input: {
      enabled: boolean;
      message?: string;
      estimated_duration_minutes?: number;
      allow_admin_access?: boolean;
    },
    actor: string,
  ): Promise<MaintenanceState> {
    const minutes = input.estimated_duration_minutes ?? null;
    const next: MaintenanceState = input.enabled
      ? {
          enabled: true,
          // An empty message would leave the 423's error.message empty.
          message: input.message?.trim() ? input.message : 'The system is under maintenance',
          estimated_duration_minutes: minutes,
          estimated_end: minutes === null ? null : new Date(Date.now() + minutes * 60_000).toISOString(),
          allow_admin_access: input.allow_admin_access ?? true,
          started_at: nowIso(),
          updated_by: actor,
        }
      : { ...OFF, updated_by: actor };
    await this.store.set(KEY, next);
    this.generation++;
    this.state = next;
    await this.shared.publish(CHANNEL, next);
    return next;
  }
}
