import type { Finding, SecurityCheck } from './security-check.js';

/** Values people leave in place from examples and tutorials. */
const KNOWN_WEAK = new Set([
  'secret',
  'changeme',
  'change-me',
  'password',
  'default',
  'jwt_secret',
  'jwt-secret',
  'your-secret-key',
  'supersecret',
  'test',
  'example',
  '123456',
]);

function keyStrength(
  key: string,
  minLength: number,
): { severity: 'critical' | 'high'; why: string } | undefined {
  // The configuration refuses short secrets, so a default is now met padded to length by repeating it.
  const lower = key.toLowerCase();
  const repeats = (word: string) =>
    lower.length % word.length === 0 && word.repeat(lower.length / word.length) === lower;
  if (KNOWN_WEAK.has(lower) || [...KNOWN_WEAK].some(repeats))
    return { severity: 'critical', why: 'a well-known default value' };
  if (key.length < minLength)
    return { severity: 'high', why: `only ${key.length} characters (at least ${minLength} expected)` };
  if (new Set(key).size < 6) return { severity: 'high', why: 'too few distinct characters' };
  return undefined;
}

const secrets: SecurityCheck = {
  name: 'secrets',
  component: 'configuration',
  description: 'Signing and encryption keys: set, not defaults, long enough',
  async run({ config }) {
    const out: Finding[] = [];
    const jwt = config.auth.jwt_secret;
    if (jwt) {
      const weak = keyStrength(jwt, 32);
      if (weak) {
        out.push({
          severity: weak.severity,
          title: 'Weak JWT signing secret',
          description: `auth.jwt_secret is ${weak.why}. Anyone who guesses it can mint access tokens for any user.`,
          affected_resources: ['config:auth.jwt_secret'],
          recommendation:
            'Set auth.jwt_secret to at least 32 random characters (e.g. `openssl rand -base64 48`).',
        });
      }
    } else {
      out.push({
        severity: 'low',
        title: 'JWT signing secret kept in the database',
        description:
          'auth.jwt_secret is not configured, so the platform generated one and stores it in the database: ' +
          'whoever can read the database or a backup of it can mint access tokens.',
        affected_resources: ['config:auth.jwt_secret'],
        recommendation: 'Set auth.jwt_secret (PLATFORM__AUTH__JWT_SECRET) from a secret store.',
      });
    }
    const eventsKey = config.events.encryption_key;
    if (!eventsKey) {
      out.push({
        severity: 'medium',
        title: 'Event encryption key kept next to the data it protects',
        description:
          'events.encryption_key is not configured, so confidential events are encrypted with a generated key ' +
          'stored in the same database: a database dump or backup exposes them.',
        affected_resources: ['config:events.encryption_key'],
        recommendation: 'Set events.encryption_key to 32 random bytes (base64 or hex) from a secret store.',
      });
    } else {
      const weak = keyStrength(eventsKey, 32);
      if (weak) {
        out.push({
          severity: weak.severity,
          title: 'Weak event encryption key',
          description: `events.encryption_key is ${weak.why}.`,
          affected_resources: ['config:events.encryption_key'],
          recommendation: 'Use 32 random bytes, base64 or hex encoded.',
        });
      }
    }
    const backupKey = config.backups.encryption_key;
    if (!backupKey) {
      out.push({
        severity: config.backups.schedule ? 'medium' : 'low',
        title: 'Backups cannot be encrypted',
        description:
          'backups.encryption_key is not set: backups (which hold every table, user hashes and secrets ' +
          `included) can only be written in plain form${config.backups.schedule ? ', and scheduled backups are' : ''}.`,
        affected_resources: ['config:backups.encryption_key'],
        recommendation: 'Set backups.encryption_key and create backups with encryption: true.',
      });
    } else {
      const weak = keyStrength(backupKey, 16);
      if (weak) {
        out.push({
          severity: weak.severity,
          title: 'Weak backup encryption key',
          description: `backups.encryption_key is ${weak.why}.`,
          affected_resources: ['config:backups.encryption_key'],
          recommendation: 'Use a long random passphrase (at least 16 characters).',
        });
      }
    }
    return out;
  },
};

const exposure: SecurityCheck = {
  name: 'exposure',
  component: 'configuration',
  description: 'Settings that widen what an attacker can reach or hide behind',
  async run({ config }) {
    const out: Finding[] = [];
    if (config.webhooks.allow_private_targets) {
      out.push({
        severity: 'high',
        title: 'Webhooks may target private addresses',
        description:
          'webhooks.allow_private_targets is on: any user who may subscribe can make the platform send ' +
          'requests to loopback, private and cloud-metadata addresses (server-side request forgery).',
        affected_resources: ['config:webhooks.allow_private_targets'],
        recommendation: 'Turn webhooks.allow_private_targets off outside development and tests.',
      });
    }
    if (!config.rate_limits.enabled) {
      out.push({
        severity: 'medium',
        title: 'Rate limiting is off',
        description: 'rate_limits.enabled is false: logins and the API can be hammered without limit.',
        affected_resources: ['config:rate_limits.enabled'],
        recommendation: 'Turn rate_limits.enabled back on.',
      });
    }
    const openProxies = config.server.trusted_proxies.filter((p) =>
      ['0.0.0.0/0', '::/0', '*', '0.0.0.0'].includes(p.trim()),
    );
    if (openProxies.length > 0) {
      out.push({
        severity: 'high',
        title: 'Every client is trusted as a proxy',
        description: `server.trusted_proxies includes ${openProxies.join(', ')}: any client can forge X-Forwarded-For and evade IP blocks and rate limits.`,
        affected_resources: ['config:server.trusted_proxies'],
        recommendation: 'List only the addresses of your own reverse proxies.',
      });
    }
    if (config.metrics.public_prometheus) {
      out.push({
        severity: 'low',
        title: 'Metrics are public',
        description: 'metrics.public_prometheus is on: GET /metrics answers without credentials.',
        affected_resources: ['config:metrics.public_prometheus'],
        recommendation: 'Turn it off, or restrict /metrics at the network level.',
      });
    }
    const smtp = config.mail.smtp_url;
    if (smtp) {
      try {
        const url = new URL(smtp);
        const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
        if (url.protocol === 'smtp:' && url.password && !loopback) {
          out.push({
            severity: 'medium',
            title: 'SMTP credentials may travel unencrypted',
            description:
              'mail.smtp_url uses smtp:// with a password: if the server does not offer STARTTLS the password ' +
              'is sent in clear text.',
            affected_resources: ['config:mail.smtp_url'],
            recommendation: 'Use smtps:// (implicit TLS, port 465).',
          });
        }
      } catch {
        // An unparseable URL is the mailer's health problem, not a security finding.
      }
    }
    return out;
  },
};

const authPolicy: SecurityCheck = {
  name: 'authentication_policy',
  component: 'configuration',
  description: 'Password length, lockout and token lifetimes',
  async run({ config }) {
    const a = config.auth;
    const out: Finding[] = [];
    if (a.password_min_length < 10) {
      out.push({
        severity: 'low',
        title: 'Short minimum password length',
        description: `auth.password_min_length is ${a.password_min_length}.`,
        affected_resources: ['config:auth.password_min_length'],
        recommendation: 'Require at least 10 characters (12 or more is better).',
      });
    }
    if (a.max_failed_logins > 10) {
      out.push({
        severity: 'low',
        title: 'Lenient account lockout',
        description: `Accounts lock only after ${a.max_failed_logins} failed logins.`,
        affected_resources: ['config:auth.max_failed_logins'],
        recommendation: 'Lock after 10 failed logins or fewer.',
      });
    }
    if (a.access_token_ttl_seconds > 3600) {
      out.push({
        severity: 'low',
        title: 'Long-lived access tokens',
        description: `Access tokens live ${a.access_token_ttl_seconds} seconds; a leaked token stays usable that long.`,
        affected_resources: ['config:auth.access_token_ttl_seconds'],
        recommendation: 'Keep access tokens to an hour or less and rely on refresh tokens.',
      });
    }
    return out;
  },
};

export const configurationChecks: SecurityCheck[] = [secrets, exposure, authPolicy];
