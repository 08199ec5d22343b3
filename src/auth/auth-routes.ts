import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import type { RateLimiter } from '../http/rate-limiter.js';
import { requestOrigin } from '../kernel/platform-events.js';
import { rolesOf, type UserStore } from '../users/user-store.js';
import type { ApiKeyStore } from './api-key-store.js';
import {
  ApiKeyView,
  ChangePasswordBody,
  CreateApiKeyBody,
  IdParams,
  LoginBody,
  Me,
  RefreshBody,
  SessionView,
  TokenPair,
} from './auth-schemas.js';
import type { AuthService, LoginResult } from './auth-service.js';
import { apiKeyView, sessionView } from './auth-views.js';
import { permissionsOf } from './roles.js';
import type { SessionStore } from './session-store.js';

const tags = ['auth'];

export function registerAuthRoutes(
  app: App,
  deps: {
    auth: AuthService;
    users: UserStore;
    sessions: SessionStore;
    apiKeys: ApiKeyStore;
    rateLimiter: RateLimiter;
  },
): void {
  const { auth } = deps;

  app.post(
    '/api/v1/auth/login',
    {
      config: { access: access.public(), authBucket: true, maintenanceExempt: true },
      schema: {
        operationId: 'login',
        tags,
        summary: 'Log in with a username or e-mail and a password',
        body: LoginBody,
        response: { 200: Envelope(TokenPair), 401: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const login = request.body.username ?? request.body.email;
      if (!login) {
        throw new AppError('VALIDATION_ERROR', 'username or email is required', {
          details: { field: 'username', reason: 'is required' },
        });
      }
      const result = await auth.login(login, request.body.password, {
        ip: request.ip,
        userAgent: String(request.headers['user-agent'] ?? ''),
        origin: requestOrigin(request),
      });
      return ok(request, result);
    },
  );

  app.post(
    '/api/v1/auth/refresh',
    {
      // Renewing a valid session is not guessing a secret: only refused refreshes count in the per-address
      // authentication bucket (everyone behind one NAT address shares it), answered ones in their user's bucket.
      config: {
        access: access.public(),
        authBucket: true,
        authBucketOnRefusal: true,
        maintenanceExempt: true,
      },
      schema: {
        operationId: 'refreshToken',
        tags,
        summary: 'Swap a refresh token for a new token pair (the old refresh token stops working)',
        body: RefreshBody,
        response: { 200: Envelope(TokenPair), 401: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request, reply) => {
      // Past the limit, a token of no live session (a guess, a stale one) is counted and answered 429 before
      // the refresh's write transaction; a live session's goes on (renewed, or revoked if the token is reused).
      let counted = false;
      if (
        (await deps.rateLimiter.authBucketFull(request)) &&
        !(await deps.sessions.ofLiveSession(request.body.refresh_token))
      ) {
        counted = true;
        await deps.rateLimiter.countRefused(request, reply);
      }
      let result: LoginResult;
      try {
        result = await auth.refresh(request.body.refresh_token);
      } catch (err) {
        if (!counted && err instanceof AppError && err.code === 'AUTHENTICATION_FAILED')
          await deps.rateLimiter.countRefused(request, reply);
        throw err;
      }
      await deps.rateLimiter.countAnswered(reply, result.user.id);
      return ok(request, result);
    },
  );

  app.post(
    '/api/v1/auth/logout',
    {
      config: { access: access.authenticated(), authBucket: true },
      schema: {
        operationId: 'logout',
        tags,
        summary: "Revoke the caller's session; its access and refresh tokens stop working at once",
        response: { 200: MessageOnly },
      },
    },
    async (request) => {
      await auth.logout(request.principal!, requestOrigin(request));
      return done(request, 'Logged out');
    },
  );

  app.get(
    '/api/v1/auth/me',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'getMe',
        tags,
        summary: 'The calling user and how they authenticated',
        response: { 200: Envelope(Me) },
      },
    },
    async (request) => {
      const p = request.principal!;
      const user = await deps.users.findById(p.userId);
      if (!user) throw new AppError('AUTHENTICATION_FAILED');
      return ok(request, {
        id: user.id,
        username: user.username,
        email: user.email,
        full_name: user.full_name,
        roles: rolesOf(user),
        permissions: p.method === 'jwt' ? permissionsOf(rolesOf(user)) : [...p.permissions],
        status: user.status,
        auth_method: p.method,
        session_id: p.sessionId ?? null,
        api_key_id: p.apiKeyId ?? null,
        password_change_required: user.password_change_required === 1,
        last_login: user.last_login,
        created_at: user.created_at,
      });
    },
  );

  app.post(
    '/api/v1/auth/change-password',
    {
      config: { access: access.authenticated(), authBucket: true },
      schema: {
        operationId: 'changePassword',
        tags,
        summary: "Change the caller's password",
        body: ChangePasswordBody,
        response: { 200: MessageOnly },
      },
    },
    async (request) => {
      await auth.changePassword(request.principal!, request.body.current_password, request.body.new_password);
      return done(request, 'Password changed');
    },
  );

  app.get(
    '/api/v1/auth/sessions',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'listSessions',
        tags,
        summary: "The caller's sessions",
        response: { 200: Envelope(Type.Object({ sessions: Type.Array(SessionView) })) },
      },
    },
    async (request) => {
      const p = request.principal!;
      const rows = await deps.sessions.listForUser(p.userId);
      return ok(request, { sessions: rows.map((s) => sessionView(s, p.sessionId)) });
    },
  );

  app.delete(
    '/api/v1/auth/sessions/:session_id',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'revokeSession',
        tags,
        summary: 'Revoke one of the caller’s sessions',
        params: IdParams('session_id'),
        response: { 200: MessageOnly, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const p = request.principal!;
      auth.assertMayChangeAccount(p, 'Revoking a session');
      const session = await deps.sessions.findById(request.params.session_id);
      if (!session || session.user_id !== p.userId) {
        throw new AppError('RESOURCE_NOT_FOUND', 'No such session', {
          details: { id: request.params.session_id },
        });
      }
      await auth.revokeSessions({ sessionId: session.id }, 'revoked_by_user');
      return done(request, 'Session revoked');
    },
  );

  app.get(
    '/api/v1/auth/api-keys',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'listApiKeys',
        tags,
        summary: "The caller's API keys (masked)",
        response: { 200: Envelope(Type.Object({ api_keys: Type.Array(ApiKeyView) })) },
      },
    },
    async (request) => {
      // Uses are counted in memory and written in batches: write them first, so the list shows them.
      await auth.flushKeyUse();
      return ok(request, {
        api_keys: (await deps.apiKeys.listForUser(request.principal!.userId)).map(apiKeyView),
      });
    },
  );

  app.post(
    '/api/v1/auth/api-keys',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'createApiKey',
        tags,
        summary: 'Create an API key; the full key is shown in this response only',
        body: CreateApiKeyBody,
        response: {
          201: Envelope(
            Type.Object({
              api_key: ApiKeyView,
              key: Type.String({ description: 'The full key. It is never shown again.' }),
            }),
          ),
        },
      },
    },
    async (request, reply) => {
      const { row, key } = await auth.createApiKey(
        request.principal!,
        request.body.name,
        request.body.scopes,
        request.body.expires_at ?? null,
      );
      return reply.code(201).send(ok(request, { api_key: apiKeyView(row), key }));
    },
  );

  app.delete(
    '/api/v1/auth/api-keys/:key_id',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'revokeApiKey',
        tags,
        summary: 'Revoke one of the caller’s API keys',
        params: IdParams('key_id'),
        response: { 200: MessageOnly, 404: { $ref: 'ErrorEnvelope#' } },
      },
    },
    async (request) => {
      const p = request.principal!;
      // A key may always revoke itself (it only gives up its own power); other keys are the account's.
      if (p.apiKeyId !== request.params.key_id) auth.assertMayChangeAccount(p, 'Revoking an API key');
      const revoked = await deps.apiKeys.revoke(p.userId, request.params.key_id);
      if (!revoked)
        throw new AppError('RESOURCE_NOT_FOUND', 'No such API key', {
          details: { id: request.params.key_id },
        });
      await auth.apiKeyRevoked(request.params.key_id);
      return done(request, 'API key revoked');
    },
  );
}
