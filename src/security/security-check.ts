import type { Kysely } from 'kysely';
import type { PlatformConfig } from '../config/config-schema.js';
import type { Tables } from '../storage/tables.js';

export type Severity = 'low' | 'medium' | 'high' | 'critical';
export const SEVERITIES: readonly Severity[] = ['low', 'medium', 'high', 'critical'];
export type ScanComponent = 'configuration' | 'permissions' | 'plugins';
export const SCAN_COMPONENTS: readonly ScanComponent[] = ['configuration', 'permissions', 'plugins'];

export interface Finding {
  severity: Severity;
  title: string;
  description: string;
  /** `type:name`, as alerts name them: `config:auth.jwt_secret`, `user:admin`, `api_key:key_…`. */
  affected_resources: string[];
  recommendation: string;
}

export interface CheckContext {
  db: Kysely<Tables>;
  config: PlatformConfig;
  now: Date;
}

/** One check of a security scan: the findings it made, or the reason it could not run. */
export interface SecurityCheck {
  name: string;
  component: ScanComponent;
  description: string;
  run(ctx: CheckContext): Promise<Finding[] | { skipped: string }>;
}
