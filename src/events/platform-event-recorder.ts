import type { PlatformEvents } from '../kernel/platform-events.js';
import type { EventService } from './event-service.js';

/**
 * Stores the platform's own events (auth.login, user.created, system.config.updated, …) through the same emit
 * path as the API, so they are queryable, streamed and delivered like any other. An event caused by a request
 * carries that request's id, correlation id, user agent and address in its metadata, as an event emitted
 * through the API does; one the platform raised by itself has them empty. A failure is logged and never
 * reaches the request that caused the event. An event announced with `announceStored` is told when it is stored.
 */
export function recordPlatformEvents(
  bus: PlatformEvents,
  events: EventService,
  log: { error: (obj: object, msg: string) => void },
): () => void {
  return bus.on('platform.event', (e) => {
    const origin = e.origin;
    const stored = events
      .emit(
        { event_type: e.type, source: e.source, data: e.data, security_level: 'internal' },
        {
          emitter: e.actor ? { userId: e.actor.id, username: e.actor.username } : undefined,
          requestId: origin?.requestId ?? e.requestId ?? '',
          userAgent: origin?.userAgent ?? '',
          ipAddress: origin?.ipAddress ?? '',
          correlationId: origin?.correlationId,
          platform: true,
        },
      )
      .then(
        () => undefined,
        (err: unknown) => log.error({ err, event_type: e.type }, 'could not store a platform event'),
      );
    e.onStored?.(stored);
  });
}
