/** The most arrivals (times in ms, any order) that fall in one window [t, t + windowMs), over every t. */
export function mostInWindow(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  let first = 0;
  for (let last = 0; last < sorted.length; last++) {
    while (sorted[last]! - sorted[first]! >= windowMs) first += 1;
    most = Math.max(most, last - first + 1);
  }
  return most;
}

/**
 * The edge of a window within which one arrival more is the time on the way, not the pace: a request is timed
 * where it arrives, and one held up on the way (the first request opening its connection, ~60 ms on a loaded
 * 2-core host; a busy event loop of the sending platform) lands that much closer to the next ones. A sender
 * going even 10 % too fast (5.5/s) fits 6 requests in 910 ms, and is still caught.
 */
export const EDGE_MS = 100;

/**
 * How a target limited to `rate` per second is checked from its side: at most `rate` arrivals in any window of
 * 1 s less `edgeMs`, and at most one more in any full second. The limit holds where requests are sent; an
 * arrival measured here also carries the time its request spent on the way (a loaded host schedules the
 * sender's and this receiver's callbacks late by some milliseconds), so a request sent exactly one interval
 * after the rate allows may be counted in the window before it, only at its edge.
 */
export function windowCounts(times: readonly number[], edgeMs: number) {
  const sorted = [...times].sort((a, b) => a - b);
  // The gaps between arrivals (ms), for the message of a failed check.
  const gaps = `gaps ${sorted.map((t, i) => Math.round(t - (sorted[i - 1] ?? t))).join(' ')}`;
  return { inner: mostInWindow(times, 1000 - edgeMs), second: mostInWindow(times, 1000), gaps };
}
