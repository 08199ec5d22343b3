import { Cron } from 'croner';

/**
 * Reads a cron expression the way the scheduler runs it: croner, evaluated in UTC, not started. One place, so
 * the configuration refuses exactly what the scheduler could not run.
 *
 * @throws Error when the expression is not valid, or names no time that ever comes (`0 0 30 2 *`)
 */
export function parseCron(pattern: string): Cron {
  const cron = new Cron(pattern, { utcOffset: 0, paused: true });
  if (cron.nextRun() === null) throw new Error(`'${pattern}' never occurs`);
  return cron;
}

/** Why `pattern` is not a cron expression the scheduler can run, or undefined when it is one. */
export function cronProblem(pattern: string): string | undefined {
  try {
    parseCron(pattern);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
