import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify';

type Bindings = Record<string, unknown>;
type Method = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Parent = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

/**
 * Fastify's per-request child logger (the one carrying `reqId`), made when the request first logs a line
 * rather than for every request: most requests log nothing (their two request lines are made only while
 * stdout keeps them, see RequestLogController), and making a pino child — its bindings serialized and
 * redacted — was about 2 % of a busy server's CPU. Lines logged are the same as the eager child's.
 */
export const lazyChildLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (
  logger,
  bindings,
  options,
) => new LazyChildLogger(logger, bindings, options) as unknown as FastifyBaseLogger;

class LazyChildLogger {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: Parent,
    private readonly bindings: Bindings,
    private readonly options: object,
  ) {}

  private real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  get level(): string {
    return (this.made ?? this.parent).level;
  }

  set level(level: string) {
    this.real().level = level;
  }

  child(bindings: Bindings, options?: object): FastifyBaseLogger {
    return this.real().child(bindings, options);
  }

  fatal(...args: unknown[]): void {
    this.log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.log('error', args);
  }
  warn(...args: unknown[]): void {
    this.log('warn', args);
  }
  info(...args: unknown[]): void {
    this.log('info', args);
  }
  debug(...args: unknown[]): void {
    this.log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.log('trace', args);
  }
  silent(): void {}

  private log(method: Method, args: unknown[]): void {
    // A level the parent drops needs no child.
    if (this.made === undefined && this.parent.isLevelEnabled?.(method) === false) return;
    (this.real()[method] as (...a: unknown[]) => void)(...args);
  }
}
