import { useEffect, useRef, useState } from 'preact/hooks';
import { accessToken } from '../../api/session.ts';
import type { EventItem } from './event-types.ts';

export type StreamStatus = 'connecting' | 'live' | 'paused' | 'reconnecting' | 'unavailable';

const MAX_EVENTS = 200;

/**
 * The live event tail over the platform's WebSocket (`/api/v1/events/stream?token=…`): subscribes to the
 * patterns, keeps the newest 200 events, and on a dropped connection reconnects with the last seen event id,
 * so the server fills the gap instead of losing events.
 */
export function useEventStream(patterns: string[], paused: boolean) {
  const [events, setEvents] = useState<EventItem[]>([]);
  const [status, setStatus] = useState<StreamStatus>('connecting');
  const [problem, setProblem] = useState<string | null>(null);
  /** The patterns the server confirmed, comma-joined: after a change, the old ones until it answers. */
  const [subscribedTo, setSubscribedTo] = useState<string | null>(null);
  const lastId = useRef<string | null>(null);
  const key = patterns.join(',');

  useEffect(() => {
    if (paused) {
      setStatus('paused');
      return;
    }
    let socket: WebSocket | null = null;
    let stopped = false;
    let failures = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;

    const connect = async () => {
      const token = await accessToken();
      if (stopped || !token) return;
      const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
      const url = `${scheme}://${location.host}/api/v1/events/stream?token=${encodeURIComponent(token)}`;
      let opened = false;
      socket = new WebSocket(url);
      let answered = false;
      socket.onopen = () => {
        opened = true;
        failures = 0;
        socket?.send(
          JSON.stringify({
            action: 'subscribe',
            patterns,
            ...(lastId.current ? { last_event_id: lastId.current } : {}),
          }),
        );
      };
      socket.onmessage = (message) => {
        let m: {
          message_type?: string;
          implicit?: boolean;
          event?: EventItem;
          last_event_id?: string;
          error?: { message?: string };
          message?: string;
        };
        try {
          m = JSON.parse(String(message.data));
        } catch {
          return;
        }
        // A socket starts on every event (`implicit`) until our subscribe answers: events come after that.
        if (m.message_type === 'subscribed' && m.implicit === true) return;
        if (m.message_type === 'subscribed') {
          answered = true;
          setStatus('live');
          setSubscribedTo(key);
          setProblem(null);
        } else if (m.message_type === 'event' && m.event && answered) {
          const ev = m.event;
          lastId.current = ev.event_id;
          setStatus('live');
          setEvents((list) => [ev, ...list.filter((e) => e.event_id !== ev.event_id)].slice(0, MAX_EVENTS));
        } else if (m.message_type === 'checkpoint' && m.last_event_id) {
          // Nothing matched for a while; the server moves our resume point on.
          lastId.current = m.last_event_id;
        } else if (m.message_type === 'error') {
          setProblem(m.error?.message ?? m.message ?? 'The stream reported an error');
        }
      };
      socket.onclose = () => {
        if (stopped) return;
        failures += 1;
        // Never opened at all, repeatedly: the platform has no event stream (or refuses us).
        if (!opened && failures >= 3) {
          setStatus('unavailable');
          setProblem('The event stream could not be opened');
        } else setStatus('reconnecting');
        timer = setTimeout(() => void connect(), Math.min(15_000, 500 * 2 ** failures));
      };
    };
    setStatus('connecting');
    void connect();
    return () => {
      stopped = true;
      clearTimeout(timer);
      socket?.close();
    };
  }, [key, paused]);

  return { events, status, problem, subscribedTo, clear: () => setEvents([]) };
}
