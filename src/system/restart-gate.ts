import type { FastifyRequest } from 'fastify';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';

/** Paths that answer during a restart (liveness and readiness say what is going on). */
const ALWAYS_OPEN = new Set(['/api/v1/health', '/api/v1/ready']);

/**
 * Lets services restart in-process without losing a request: while a restart runs, new requests wait at the
 * door (up to `holdMs`, then 503 SERVICE_UNAVAILABLE), and the restart begins only once the requests already
 * in flight have finished (up to `drainMs`). Restarts run one at a time. Streams are neither held nor waited
 * for: they live as long as their client, and outlive a restart.
 */
export class RestartGate {
  private inFlight = 0;
  private readonly counted = new WeakSet<FastifyRequest>();
  private closed: Promise<void> | undefined;
  private queue: Promise<void> = Promise.resolve();
  private idle: (() => void)[] = [];

  constructor(private readonly options: { holdMs: () => number; drainMs: () => number }) {}

  register(app: App): void {
    app.addHook('onRequest', (request, _reply, done) => {
      // Callback form: almost every request passes straight through, without a promise.
      if (isExempt(request)) return done();
      if (this.closed === undefined) {
        this.enter(request);
        return done();
      }
      this.hold(request).then(() => done(), done);
    });
    app.addHook('onResponse', (request, _reply, done) => {
      this.leave(request);
      done();
    });
    app.addHook('onRequestAbort', (request, done) => {
      this.leave(request);
      done();
    });
  }

  private enter(request: FastifyRequest): void {
    this.inFlight += 1;
    this.counted.add(request);
  }

  /** Holds a request while a restart runs; refuses it if the restart outlasts the hold time. */
  private async hold(request: FastifyRequest): Promise<void> {
    while (this.closed !== undefined) {
      if (!(await within(this.closed, this.options.holdMs()))) {
        throw new AppError('SERVICE_UNAVAILABLE', 'The platform is restarting its services; retry shortly', {
          headers: { 'retry-after': '5' },
        });
      }
    }
    this.enter(request);
  }

  /** True while a restart holds new requests. */
  get restarting(): boolean {
    return this.closed !== undefined;
  }

  /**
   * Runs `fn` with the door closed and no request in flight. `request` is the request asking for it,
   * which is not waited for.
   */
  async run<T>(fn: () => Promise<T>, request?: FastifyRequest): Promise<T> {
    if (request) this.leave(request);
    const previous = this.queue;
    let release!: () => void;
    this.queue = new Promise<void>((resolve) => {
      release = resolve;
    });
    await previous;
    let open!: () => void;
    this.closed = new Promise<void>((resolve) => {
      open = resolve;
    });
    try {
      await this.drained(this.options.drainMs());
      return await fn();
    } finally {
      this.closed = undefined;
      open();
      release();
    }
  }

  private leave(request: FastifyRequest): void {
    if (!this.counted.delete(request)) return;
    this.inFlight -= 1;
    if (this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
  }

  private async drained(timeoutMs: number): Promise<void> {
    if (this.inFlight === 0) return;
    const idle = new Promise<void>((resolve) => this.idle.push(resolve));
    // A request that never ends (a client holding it open) must not block the restart forever.
    await within(idle, timeoutMs);
  }
}

function isExempt(request: FastifyRequest): boolean {
  if (request.routeOptions.config?.queryToken) return true;
  if (String(request.headers.upgrade ?? '').toLowerCase() === 'websocket') return true;
  return ALWAYS_OPEN.has(request.routeOptions.url ?? '');
}

/** Resolves true when `promise` settles within `ms`, false otherwise. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
