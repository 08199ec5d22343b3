import { useEffect, useRef, useState } from 'preact/hooks';

/** At most one announcement this often, however fast rows arrive. */
export const ANNOUNCE_EVERY_MS = 5000;

/**
 * Counts rows (by id) that were not in the list before, and puts a polite summary of them ("3 new events") into
 * `text` at most once every ANNOUNCE_EVERY_MS: the first after a quiet spell at once, the rest gathered into
 * the next one. While `muted` nothing is announced and what arrives is not saved up for later.
 */
export function useRowAnnouncer(ids: readonly string[], muted: boolean): string {
  const [text, setText] = useState('');
  const seen = useRef<Set<string> | null>(null);
  const pending = useRef(0);
  const lastAt = useRef(0);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  const flush = () => {
    timer.current = undefined;
    const n = pending.current;
    if (n === 0) return;
    pending.current = 0;
    lastAt.current = Date.now();
    setText(`${n} new ${n === 1 ? 'event' : 'events'}`);
  };

  useEffect(() => {
    const previous = seen.current;
    seen.current = new Set(ids);
    // The rows already there when the tail opens are not news.
    if (!previous || muted) return;
    const fresh = ids.filter((id) => !previous.has(id)).length;
    if (fresh === 0) return;
    pending.current += fresh;
    if (timer.current) return;
    const wait = Math.max(0, lastAt.current + ANNOUNCE_EVERY_MS - Date.now());
    timer.current = setTimeout(flush, wait);
  }, [ids.join('|'), muted]);

  useEffect(() => {
    if (!muted) return;
    clearTimeout(timer.current);
    timer.current = undefined;
    pending.current = 0;
    setText('');
  }, [muted]);

  useEffect(() => () => clearTimeout(timer.current), []);
  return text;
}
