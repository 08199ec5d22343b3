/**
 * What `work` settles to, or a rejection (code `ETIMEDOUT`, "<what> did not answer within <ms> ms") once `ms`
 * have passed without it: for calls to a backend that may be connected but not answering (Redis paused or
 * overloaded), which would otherwise hold their callers for as long. When the deadline wins, `late` gets `work`
 * (to undo what it may still do, e.g. release a lock granted after the caller gave up); a rejection of `work`
 * after the deadline is never left unhandled.
 */
export function withDeadline<T>(
  work: Promise<T>,
  ms: number,
  what: string,
  late?: (work: Promise<T>) => void,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      work.catch(() => {});
      late?.(work);
      reject(Object.assign(new Error(`${what} did not answer within ${ms} ms`), { code: 'ETIMEDOUT' }));
    }, ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}
