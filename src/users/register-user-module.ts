import type { PasswordHasher } from '../auth/passwords.js';
import type { Mailer } from '../mail/mailer.js';
import type { PlatformContext } from '../platform-context.js';
import { registerAdminUserRoutes } from './admin-user-routes.js';
import { registerUserAnalyticsRoutes } from './user-analytics-routes.js';
import { registerUserResourceRoutes } from './user-resource-routes.js';
import { UserService } from './user-service.js';

/** Users: the admin API, the resource API and user analytics. */
export function registerUserModule(
  ctx: PlatformContext,
  deps: { hasher: PasswordHasher; mailer: Mailer },
): UserService {
  const users = new UserService({
    db: ctx.database.db,
    users: ctx.users,
    auth: ctx.auth,
    hasher: deps.hasher,
    mailer: deps.mailer,
    audit: ctx.audit,
    events: ctx.events,
    config: ctx.cfg,
  });
  registerAdminUserRoutes(ctx.app, { users });
  registerUserResourceRoutes(ctx.app, { users });
  // Analytics count and group every user and session: off the server's thread (Database.reads).
  registerUserAnalyticsRoutes(ctx.app, { db: ctx.database.reads, users });
  return users;
}
