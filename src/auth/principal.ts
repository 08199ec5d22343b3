/** Who a request acts as, resolved from a bearer token or an API key. */
export interface Principal {
  readonly userId: string;
  readonly username: string;
  readonly roles: readonly string[];
  /** Effective permissions; `*` grants every one. */
  readonly permissions: readonly string[];
  readonly isAdmin: boolean;
  readonly method: 'jwt' | 'api_key';
  readonly sessionId?: string;
  readonly apiKeyId?: string;
}

export function hasPermission(principal: Principal, permission: string): boolean {
  return principal.permissions.includes('*') || principal.permissions.includes(permission);
}
