import { performance } from 'node:perf_hooks';
import type { FastifyBaseLogger } from 'fastify';
import { AppError } from '../http/app-error.js';
import { nowIso } from '../kernel/new-id.js';
import type { EventOrigin, PlatformEvents } from '../kernel/platform-events.js';
import type { ServiceRegistry } from '../kernel/service-registry.js';
import type { RestartGate } from './restart-gate.js';

export interface RestartState {
  status: 'idle' | 'scheduled' | 'restarting' | 'completed' | 'failed';
  reason: string | null;
  requested_by: string | null;
  requested_at: string | null;
  delay_seconds: number | null;
  scheduled_for: string | null;
  notify_users: boolean;
  started_at: string | null;
  completed_at: string | null;
  duration_ms: number | null;
  /** The services in the order they start again (they stop in reverse). */
  services: string[];
  error: string | null;
}

const IDLE: RestartState = {
  status: 'idle',
  reason: null,
  requested_by: null,
  requested_at: null,
  delay_seconds: null,
  scheduled_for: null,
  notify_users: false,
  started_at: null,
  completed_at: null,
  duration_ms: null,
  services: [],
  error: null,
};

/**
 * The graceful in-process restart of this instance's services: after the delay, every service stops (last
 * started first) and starts again, behind the restart gate, so the HTTP server stays up and no request is
 * lost. Running tasks are interrupted like at any stop (resumable ones resume).
 */
export class SystemRestart {
  private state: RestartState = IDLE;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      registry: ServiceRegistry;
      gate: RestartGate;
      events: PlatformEvents;
      log: FastifyBaseLogger;
    },
  ) {}

  current(): RestartState {
    return { ...this.state, services: [...this.state.services] };
  }

  /**
   * Plans a restart; a restart already planned or under way → RESOURCE_CONFLICT. `arrivedAt` (epoch ms) is
   * when the request asking for it arrived: a request that arrived while the last restart ran was held at
   * the restart gate until that restart ended, and is refused as well rather than restarting a second time.
   */
  schedule(
    input: { reason: string; delaySeconds: number; notifyUsers: boolean; arrivedAt?: number },
    actor: { id: string; username: string },
    origin: EventOrigin,
  ): RestartState {
    if (this.state.status === 'scheduled' || this.state.status === 'restarting') {
      throw new AppError('RESOURCE_CONFLICT', `A restart is already ${this.state.status}`, {
        details: { status: this.state.status, scheduled_for: this.state.scheduled_for },
      });
    }
    const ended = this.state.completed_at === null ? undefined : Date.parse(this.state.completed_at);
    if (ended !== undefined && input.arrivedAt !== undefined && input.arrivedAt < ended) {
      throw new AppError('RESOURCE_CONFLICT', 'A restart was under way when this request arrived', {
        details: { status: this.state.status, completed_at: this.state.completed_at },
      });
    }
    const now = Date.now();
    this.state = {
      ...IDLE,
      status: 'scheduled',
      reason: input.reason,
      requested_by: actor.username,
      requested_at: new Date(now).toISOString(),
      delay_seconds: input.delaySeconds,
      scheduled_for: new Date(now + input.delaySeconds * 1000).toISOString(),
      notify_users: input.notifyUsers,
      services: this.deps.registry.startOrder(),
    };
    if (input.notifyUsers) {
      this.deps.events.announce(
        'system.restart',
        'system',
        {
          reason: input.reason,
          delay_seconds: input.delaySeconds,
          scheduled_for: this.state.scheduled_for,
          requested_by: actor.username,
        },
        { actor, origin },
      );
    }
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.perform().finally(() => {
        this.running = undefined;
      });
    }, input.delaySeconds * 1000);
    this.timer.unref();
    return this.current();
  }

  /** Called as the platform closes: a planned restart is dropped, one under way is waited for. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.state.status === 'scheduled') this.state = { ...this.state, status: 'idle' };
    await this.running;
  }

  private async perform(): Promise<void> {
    const { registry } = this.deps;
    this.state = { ...this.state, status: 'restarting', started_at: nowIso() };
    this.deps.log.warn({ reason: this.state.reason }, 'restarting the services');
    const start = performance.now();
    try {
      await this.deps.gate.run(async () => {
        await registry.stopAll();
        await registry.startAll();
      });
      this.state = {
        ...this.state,
        status: 'completed',
        completed_at: nowIso(),
        duration_ms: Math.round((performance.now() - start) * 100) / 100,
      };
      this.deps.log.warn({ duration_ms: this.state.duration_ms }, 'services restarted');
    } catch (err) {
      this.state = {
        ...this.state,
        status: 'failed',
        completed_at: nowIso(),
        duration_ms: Math.round((performance.now() - start) * 100) / 100,
        error: err instanceof Error ? err.message : String(err),
      };
      this.deps.log.error({ err }, 'restart of the services failed');
    }
  }
}
