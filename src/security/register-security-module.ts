import type { PlatformContext } from '../platform-context.js';
import { bookkeeping } from '../storage/bookkeeping.js';
import { registerAlertRoutes } from './alert-routes.js';
import { AlertStore } from './alert-store.js';
import { FailedLoginStore } from './failed-login-store.js';
import { ScanStore } from './scan-store.js';
import { SecurityAlerts } from './security-alerts.js';
import { SecurityMonitor } from './security-monitor.js';
import { registerSecurityRoutes } from './security-routes.js';
import { type ScanTaskRunner, SecurityScanner } from './security-scanner.js';

/**
 * Security operations: the `security_monitor` service (failed logins, alert rules), scans, alerts and the
 * security overview. Scans run as `security_scan` tasks of the task runner.
 */
export function registerSecurityModule(
  ctx: PlatformContext,
  deps: { tasks?: ScanTaskRunner | undefined } = {},
) {
  const tasks: ScanTaskRunner = deps.tasks ?? ctx.tasks;
  const db = ctx.database.db;
  const log = ctx.app.log.child({ component: 'security' });
  const failedLogins = new FailedLoginStore(db, bookkeeping(ctx.database));
  const alerts = new SecurityAlerts(new AlertStore(db), ctx.events);
  const monitor = new SecurityMonitor({
    ...{ events: ctx.events, failedLogins, alerts, shared: ctx.shared },
    config: ctx.cfg,
    log,
  });
  ctx.registry.register(monitor);
  const scans = new ScanStore(db);
  const scanner = new SecurityScanner({ db, store: scans, config: ctx.cfg, log, tasks });
  ctx.onClose(() => scanner.drain());
  ctx.app.addHook('onResponse', (_request, reply, done) => {
    monitor.observeResponse(reply.statusCode);
    done();
  });
  registerSecurityRoutes(ctx.app, { db, audit: ctx.audit, alerts, scans, scanner, failedLogins });
  registerAlertRoutes(ctx.app, { alerts, audit: ctx.audit });
  return { alerts, monitor, scanner };
}
