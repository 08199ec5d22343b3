import type { PlatformConfig } from './config-schema.js';
import type { ConfigProblem } from './config-tree.js';

/**
 * Secrets that may be left empty (the platform then generates one, or the feature is off) but, when set, must
 * be long enough to resist guessing: a short `auth.jwt_secret` lets anyone who guesses it mint access tokens.
 */
export const SECRET_MIN_LENGTHS: readonly { key: string; min: number }[] = [
  { key: 'auth.jwt_secret', min: 32 },
  { key: 'events.encryption_key', min: 32 },
  // A passphrase (the key is derived from it with scrypt), as the security scan measures it.
  { key: 'backups.encryption_key', min: 16 },
];

/** A problem for each secret set shorter than its minimum, and for settings that contradict each other. */
export function secretSettingProblems(config: PlatformConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  for (const { key, min } of SECRET_MIN_LENGTHS) {
    const [section, name] = key.split('.') as [string, string];
    const value = (config as unknown as Record<string, Record<string, unknown>>)[section]?.[name];
    if (typeof value === 'string' && value !== '' && value.length < min)
      problems.push({ field: key, reason: `must be empty or at least ${min} characters long` });
  }
  const auth = config.auth as Partial<PlatformConfig['auth']> | undefined;
  const access = auth?.access_token_ttl_seconds;
  const refresh = auth?.refresh_token_ttl_seconds;
  if (typeof access === 'number' && typeof refresh === 'number' && refresh < access) {
    problems.push({
      field: 'auth.refresh_token_ttl_seconds',
      reason: `must be at least auth.access_token_ttl_seconds (${access})`,
    });
  }
  return problems;
}
