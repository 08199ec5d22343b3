import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/auth/principal.js';
import { access } from '../../src/http/access.js';
import { AppError } from '../../src/http/app-error.js';
import { enforceAccess } from '../../src/http/request-gates.js';

const principal = (permissions: string[], roles = ['user']): Principal => ({
  userId: 'usr_1',
  username: 'someone',
  roles,
  permissions,
  isAdmin: roles.includes('admin'),
  method: 'jwt',
});

const refusal = (fn: () => void): AppError | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
};

describe('enforceAccess', () => {
  it('lets anyone through a public rule', () => {
    expect(refusal(() => enforceAccess(access.public(), undefined))).toBeUndefined();
  });

  it('refuses a missing principal with AUTHENTICATION_FAILED and WWW-Authenticate', () => {
    const err = refusal(() => enforceAccess(access.authenticated(), undefined));
    expect(err?.code).toBe('AUTHENTICATION_FAILED');
    expect(err?.status).toBe(401);
    expect(err?.headers).toEqual({ 'www-authenticate': 'Bearer' });
  });

  it('allows an events permission its holder has', () => {
    expect(
      refusal(() => enforceAccess(access.permission('events:emit'), principal(['events:emit']))),
    ).toBeUndefined();
  });

  it('refuses a missing events permission with INSUFFICIENT_EVENT_PERMISSIONS', () => {
    const err = refusal(() =>
      enforceAccess(access.permission('events:subscribe'), principal(['events:emit'])),
    );
    expect(err?.code).toBe('INSUFFICIENT_EVENT_PERMISSIONS');
    expect(err?.status).toBe(403);
    expect(err?.details).toEqual({ required_permission: 'events:subscribe' });
  });

  it('refuses other missing permissions with AUTHORIZATION_DENIED', () => {
    const err = refusal(() => enforceAccess(access.permission('read:metrics'), principal(['read:system'])));
    expect(err?.code).toBe('AUTHORIZATION_DENIED');
  });

  it('grants everything to *', () => {
    expect(
      refusal(() => enforceAccess(access.permission('write:plugins'), principal(['*'], ['admin']))),
    ).toBeUndefined();
  });

  it('requires the admin role and the area scope on admin routes', () => {
    expect(refusal(() => enforceAccess(access.admin('admin:users'), principal(['*'], ['user'])))?.code).toBe(
      'ADMIN_REQUIRED',
    );
    expect(
      refusal(() => enforceAccess(access.admin('admin:users'), principal(['read:system'], ['admin'])))?.code,
    ).toBe('INSUFFICIENT_ADMIN_PERMISSIONS');
    expect(
      refusal(() => enforceAccess(access.admin('admin:users'), principal(['admin:users'], ['admin']))),
    ).toBeUndefined();
  });
});
