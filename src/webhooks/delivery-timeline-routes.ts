import { Type } from '@sinclair/typebox';
import { callerOf } from '../events/subscription-routes.js';
import { SubscriptionIdParams } from '../events/subscription-schemas.js';
import type { SubscriptionService } from '../events/subscription-service.js';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import { MAX_POINTS, RESOLUTIONS } from '../metrics/metric-series.js';
import { bucketRange } from '../metrics/time-buckets.js';
import type { DeliveryTimelineStore } from './delivery-timeline-store.js';

const DAY_MS = 86_400_000;

const TimelineQuery = Type.Object(
  {
    start_time: Type.Optional(
      Type.String({ format: 'date-time', description: 'Default: end_time minus 24 hours' }),
    ),
    end_time: Type.Optional(Type.String({ format: 'date-time', description: 'Default: now' })),
    resolution: Type.Optional(
      Type.Union(
        Object.keys(RESOLUTIONS).map((r) => Type.Literal(r)),
        { default: '1h', description: `Bucket width; at most ${MAX_POINTS} buckets` },
      ),
    ),
  },
  { additionalProperties: false },
);

const Timeline = Type.Object({
  time_range: Type.Object({ start: Timestamp, end: Timestamp, resolution: Type.String() }),
  buckets: Type.Array(
    Type.Object({
      timestamp: Timestamp,
      delivered: Type.Integer({ minimum: 0, description: 'Attempts answered with a 2xx' }),
      failed: Type.Integer({
        minimum: 0,
        description: 'Attempts that failed: another status, a timeout, a refused or broken connection',
      }),
    }),
    { description: 'Oldest first; buckets without attempts are left out' },
  ),
  totals: Type.Object({ delivered: Type.Integer(), failed: Type.Integer() }),
});

export function registerDeliveryTimelineRoutes(
  app: App,
  deps: { subscriptions: SubscriptionService; timeline: DeliveryTimelineStore },
): void {
  app.get(
    '/api/v1/events/subscriptions/:subscription_id/delivery-timeline',
    {
      config: { access: access.permission('events:subscribe') },
      schema: {
        operationId: 'getSubscriptionDeliveryTimeline',
        tags: ['events'],
        summary: "A subscription's delivery attempts over time: delivered and failed per bucket",
        description:
          'Counts the attempts of one subscription in a time range (default: the last 24 hours, by the hour). ' +
          'Same ownership as the subscription: its owner or an admin; anyone else gets 404 ' +
          'SUBSCRIPTION_NOT_FOUND. More than 1000 buckets is refused with 422 VALIDATION_ERROR.',
        params: SubscriptionIdParams,
        querystring: TimelineQuery,
        response: { 200: Envelope(Timeline), 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const { startMs, endMs, resolution, width } = bucketRange(request.query, {
        spanMs: DAY_MS,
        resolution: '1h',
        what: 'buckets',
      });
      const sub = await deps.subscriptions.get(callerOf(request), request.params.subscription_id);
      const buckets = await deps.timeline.buckets(sub.id, startMs, endMs, width);
      const totals = { delivered: 0, failed: 0 };
      for (const b of buckets) {
        totals.delivered += b.delivered;
        totals.failed += b.failed;
      }
      return ok(request, {
        time_range: {
          start: new Date(startMs).toISOString(),
          end: new Date(endMs).toISOString(),
          resolution,
        },
        buckets,
        totals,
      });
    },
  );
}
