/** Every scope the platform knows; API keys may be narrowed to any subset of their owner's. */
export const ALL_PERMISSIONS = [
  'read:system',
  'read:metrics',
  'read:plugins',
  'write:plugins',
  'read:users',
  'write:users',
  'events:emit',
  'events:subscribe',
  'write:cache',
  'admin:system',
  'admin:config',
  'admin:services',
  'admin:backup',
  'admin:security',
  'admin:users',
  'admin:plugins',
] as const;
export type Permission = (typeof ALL_PERMISSIONS)[number];

const USER: Permission[] = ['read:system', 'read:plugins', 'events:emit', 'events:subscribe'];

/** Roles → permissions (decisions §2). The admin role holds every permission. */
export const ROLE_PERMISSIONS: Record<string, readonly string[]> = {
  user: USER,
  moderator: [...USER, 'read:metrics', 'read:users'],
  admin: ['*'],
};

export const ROLES = Object.keys(ROLE_PERMISSIONS);

export function permissionsOf(roles: readonly string[]): string[] {
  const out = new Set<string>();
  for (const r of roles) for (const p of ROLE_PERMISSIONS[r] ?? []) out.add(p);
  return out.has('*') ? ['*'] : [...out].sort();
}

/** Expands `*` to the concrete list, for showing a user's permissions. */
export function expandPermissions(permissions: readonly string[]): string[] {
  return permissions.includes('*') ? [...ALL_PERMISSIONS] : [...permissions];
}
