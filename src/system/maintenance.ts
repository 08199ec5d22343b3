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

  constructor(
    private readonly store: SystemStateStore,
    private readonly shared: SharedState,
  ) {}

  async start(): Promise<void> {
    this.state = (await this.store.get<MaintenanceState>(KEY)) ?? OFF;
    this.unsubscribe = this.shared.subscribe(CHANNEL, (m) => {
      this.state = m as MaintenanceState;
    });
  }

  stop(): void {
    this.unsubscribe?.();
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
          message: input.message ?? 'The system is under maintenance',
          estimated_duration_minutes: minutes,
          estimated_end: minutes === null ? null : new Date(Date.now() + minutes * 60_000).toISOString(),
          allow_admin_access: input.allow_admin_access ?? true,
          started_at: nowIso(),
          updated_by: actor,
        }
      : { ...OFF, updated_by: actor };
    await this.store.set(KEY, next);
    this.state = next;
    await this.shared.publish(CHANNEL, next);
    return next;
  }
}
