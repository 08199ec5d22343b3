/** pino's level numbers by name (`silent` prints nothing). */
const LEVELS: Record<string, number> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
  silent: Number.POSITIVE_INFINITY,
};
const INFO = 30;
/** Fastify's two lines per request: stdout keeps them, the log store does not. */
const PER_REQUEST = new Set(['incoming request', 'request completed']);

export interface LineSink {
  write(line: string): unknown;
}

/**
 * The one pino destination of the platform's logger. Every serialized (and so already redacted) line goes
 * to stdout when it reaches `logging.level`, and to the log store when it is INFO or above and not a
 * per-request line. pino tells it each line's level and message through `lastLevel` / `lastMsg`
 * (the `pino.metadata` protocol), so routing costs no parsing.
 */
export class LogOutput {
  lastLevel = 0;
  lastMsg = '';
  private threshold: number;
  private sink: ((line: string) => void) | undefined;

  constructor(
    level: string,
    private readonly stdout: LineSink = process.stdout,
  ) {
    Object.defineProperty(this, Symbol.for('pino.metadata'), { value: true });
    this.threshold = LEVELS[level] ?? INFO;
  }

  /** pino's own level: as verbose as stdout asks, and never quieter than INFO, which the log store needs. */
  get loggerLevel(): string {
    if (this.threshold >= INFO) return 'info';
    return this.threshold <= LEVELS['trace']! ? 'trace' : 'debug';
  }

  /** Applies a new `logging.level`; returns the level to set on the pino logger. */
  setLevel(level: string): string {
    this.threshold = LEVELS[level] ?? INFO;
    return this.loggerLevel;
  }

  /** Whether Fastify's two lines per request are kept anywhere: by stdout at INFO or more verbose only. */
  keepsRequestLines(): boolean {
    return this.threshold <= INFO;
  }

  /** Where INFO-and-above records go besides stdout (the log store's queue). */
  attach(sink: ((line: string) => void) | undefined): void {
    this.sink = sink;
  }

  write(line: string): void {
    const level = this.lastLevel;
    if (level >= this.threshold) this.stdout.write(line);
    if (level >= INFO && this.sink && !PER_REQUEST.has(this.lastMsg)) this.sink(line);
  }
}
