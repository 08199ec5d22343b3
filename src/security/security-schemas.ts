import { Type } from '@sinclair/typebox';
import { Timestamp } from '../http/envelope.js';

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const severityName = (options: { default?: string; description?: string } = {}) =>
  Type.Union(
    [Type.Literal('low'), Type.Literal('medium'), Type.Literal('high'), Type.Literal('critical')],
    options,
  );
export const SeverityName = severityName();
export const ComponentName = Type.Union([
  Type.Literal('plugins'),
  Type.Literal('configuration'),
  Type.Literal('permissions'),
]);
const BySeverity = Type.Object({
  low: Type.Integer(),
  medium: Type.Integer(),
  high: Type.Integer(),
  critical: Type.Integer(),
});

export const AlertSchema = Type.Object({
  id: Type.String(),
  type: Type.String({
    description:
      'brute_force_account, brute_force_ip, new_admin_user, admin_role_granted, plugin_wildcard_permissions, server_errors',
  }),
  severity: Type.String(),
  title: Type.String(),
  message: Type.String({ description: 'The same text as title' }),
  description: Type.String(),
  timestamp: Timestamp,
  status: Type.String({ description: 'open, acknowledged or resolved' }),
  affected_resources: Type.Array(Type.String(), {
    description: 'type:name, e.g. user:admin, ip:203.0.113.9',
  }),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  occurrences: Type.Integer({ description: 'How often the rule fired while the alert was unresolved' }),
  updated_at: Timestamp,
  acknowledged_at: Nullable(Timestamp),
  acknowledged_by: Nullable(Type.String()),
  resolved_at: Nullable(Timestamp),
  resolved_by: Nullable(Type.String()),
  note: Type.String(),
});

export const ScanBody = Type.Object(
  {
    type: Type.Optional(
      Type.Union([Type.Literal('full'), Type.Literal('quick')], {
        default: 'full',
        description: 'full: every component; quick: configuration only (unless components are given)',
      }),
    ),
    components: Type.Optional(Type.Array(ComponentName, { uniqueItems: true, maxItems: 3 })),
    severity_threshold: Type.Optional(
      severityName({
        default: 'low',
        description:
          'Findings below this severity are left out of the result (and counted in below_threshold)',
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [
      { type: 'full', components: ['plugins', 'configuration', 'permissions'], severity_threshold: 'medium' },
    ],
  },
);

export const ScanStarted = Type.Object({
  scan_id: Type.String(),
  status: Type.Literal('started'),
  type: Type.String(),
  estimated_duration_ms: Type.Integer({
    minimum: 0,
    description:
      "Each requested check's mean measured duration in the last ten completed scans, plus their mean " +
      'bookkeeping time; checks no recent scan ran are estimated from the rows they read (see estimate_basis)',
  }),
  estimate_basis: Type.Union([Type.Literal('recent_scans'), Type.Literal('component_counts')], {
    description:
      '`recent_scans`: every part measured; `component_counts`: some part estimated a priori from the ' +
      'number of rows the components read (no recent measurement)',
  }),
  components_to_scan: Type.Array(Type.String()),
  severity_threshold: Type.String(),
  task_id: Nullable(Type.String()),
  created_at: Timestamp,
});

export const ScanSchema = Type.Object({
  scan_id: Type.String(),
  status: Type.String({ description: 'started, running, completed, failed or cancelled' }),
  type: Type.String(),
  components_to_scan: Type.Array(Type.String()),
  severity_threshold: Type.String(),
  requested_by: Type.String(),
  task_id: Nullable(Type.String()),
  created_at: Timestamp,
  started_at: Nullable(Timestamp),
  completed_at: Nullable(Timestamp),
  duration_ms: Type.Union([Type.Integer(), Type.Null()]),
  error: Nullable(Type.String()),
  summary: Type.Object({
    total_findings: Type.Integer(),
    by_severity: BySeverity,
    checks_run: Type.Integer(),
    checks_passed: Type.Integer(),
    checks_failed: Type.Integer(),
    checks_skipped: Type.Integer(),
    checks_errored: Type.Integer(),
    below_threshold: Type.Integer(),
  }),
  checks: Type.Array(
    Type.Object({
      name: Type.String(),
      component: Type.String(),
      description: Type.String(),
      status: Type.String({ description: 'passed, failed (made findings), skipped (with reason) or error' }),
      findings: Type.Integer(),
      below_threshold: Type.Integer(),
      duration_ms: Type.Number(),
      reason: Type.Optional(Type.String()),
    }),
  ),
  findings: Type.Array(
    Type.Object({
      id: Type.String(),
      check: Type.String(),
      component: Type.String(),
      severity: Type.String(),
      title: Type.String(),
      description: Type.String(),
      affected_resources: Type.Array(Type.String()),
      recommendation: Type.String(),
    }),
  ),
});

export const SecurityStatusSchema = Type.Object({
  status: Type.String({ description: 'secure, warning or critical' }),
  last_scan: Type.Union([Timestamp, Type.Null()], { description: 'When the last completed scan ended' }),
  last_scan_id: Nullable(Type.String()),
  last_scan_findings: Type.Union([BySeverity, Type.Null()]),
  open_alerts: Type.Integer({ description: 'Unresolved alerts (open or acknowledged)' }),
  alerts: Type.Array(AlertSchema, { description: 'The 50 newest unresolved alerts' }),
  metrics: Type.Object({
    failed_logins_24h: Type.Integer(),
    blocked_ips: Type.Integer({ description: 'Block rules in force' }),
    active_sessions: Type.Integer(),
    api_key_usage: Type.Integer({ description: 'Requests ever authenticated by an API key' }),
    api_keys_used_24h: Type.Integer(),
    active_api_keys: Type.Integer(),
  }),
});
