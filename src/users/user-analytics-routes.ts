import { Type } from '@sinclair/typebox';
import type { Kysely } from 'kysely';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { Envelope, ok, Timestamp } from '../http/envelope.js';
import type { Tables } from '../storage/tables.js';
import { userAnalytics } from './user-analytics.js';
import type { UserService } from './user-service.js';

const Counts = Type.Record(Type.String(), Type.Integer());

const Analytics = Type.Object({
  period: Type.String(),
  group_by: Type.String(),
  start_time: Timestamp,
  end_time: Timestamp,
  summary: Type.Object({
    total_users: Type.Integer(),
    active_users: Type.Integer({ description: 'Users who logged in within the period' }),
    new_users_this_period: Type.Integer(),
    growth_rate: Type.Union([Type.Number(), Type.Null()], {
      description:
        'New users ÷ users that existed before the period (0.25 = 25 %); null when there were none',
    }),
  }),
  timeline: Type.Array(
    Type.Object({
      date: Type.String({ description: 'First day of the bucket (UTC), YYYY-MM-DD' }),
      new_users: Type.Integer(),
      active_users: Type.Integer({ description: 'Distinct users who logged in within the bucket' }),
      total_users: Type.Integer({ description: 'Users at the end of the bucket' }),
    }),
  ),
  demographics: Type.Object({ by_role: Counts, by_status: Counts }),
});

export function registerUserAnalyticsRoutes(
  app: App,
  deps: { db: Kysely<Tables>; users: UserService },
): void {
  app.get(
    '/api/v1/admin/analytics/users',
    {
      config: { access: access.admin('admin:users') },
      schema: {
        operationId: 'adminUserAnalytics',
        tags: ['admin', 'users'],
        summary: 'User analytics: totals, activity and growth over a period, a timeline, and demographics',
        querystring: Type.Object(
          {
            period: Type.Optional(
              Type.Union(
                [Type.Literal('24h'), Type.Literal('7d'), Type.Literal('30d'), Type.Literal('90d')],
                {
                  default: '30d',
                },
              ),
            ),
            group_by: Type.Optional(
              Type.Union([Type.Literal('day'), Type.Literal('week'), Type.Literal('month')], {
                default: 'day',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Analytics) },
      },
    },
    async (request) => {
      await deps.users.liftExpiredSuspensions();
      return ok(
        request,
        await userAnalytics(deps.db, request.query.period ?? '30d', request.query.group_by ?? 'day'),
      );
    },
  );
}
