import { Type } from '@sinclair/typebox';
import { access } from '../http/access.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import { listUsers, UserListing } from './user-listing.js';
import {
  CreateUserBody,
  EmailDelivery,
  ResetPasswordBody,
  SuspendBody,
  UpdateUserBody,
  UserDetail,
  UserIdParams,
  UserListQuery,
} from './user-schemas.js';
import type { UserService } from './user-service.js';

const tags = ['admin', 'users'];
const rule = { access: access.admin('admin:users') };
const NotFound = { 404: { $ref: 'ErrorEnvelope#' } };
const Conflict = { 409: { $ref: 'ErrorEnvelope#' } };

/** `/api/v1/admin/users`: user administration (admin role and scope admin:users). */
export function registerAdminUserRoutes(app: App, deps: { users: UserService }): void {
  const { users } = deps;

  app.get(
    '/api/v1/admin/users',
    {
      config: rule,
      schema: {
        operationId: 'adminListUsers',
        tags,
        summary: 'List users with search, filters, sorting and pagination',
        querystring: UserListQuery,
        response: {
          200: Envelope(UserListing),
        },
      },
    },
    async (request) => ok(request, await listUsers(users, request.query)),
  );

  app.get(
    '/api/v1/admin/users/:user_id',
    {
      config: rule,
      schema: {
        operationId: 'adminGetUser',
        tags,
        summary: 'A user in detail: permissions, profile, preferences, metadata, sessions and API keys',
        params: UserIdParams,
        response: { 200: Envelope(Type.Object({ user: UserDetail })), ...NotFound },
      },
    },
    async (request) => ok(request, { user: await users.detail(request.params.user_id) }),
  );

  app.post(
    '/api/v1/admin/users',
    {
      config: { ...rule, idempotent: true },
      schema: {
        operationId: 'adminCreateUser',
        tags,
        summary: 'Create a user (active, e-mail not verified); optionally send the welcome e-mail',
        body: CreateUserBody,
        response: {
          201: Envelope(Type.Object({ user: UserDetail, email_delivery: EmailDelivery })),
          ...Conflict,
        },
      },
    },
    async (request, reply) => {
      const { row, emailDelivery } = await users.create(request.body, request);
      return reply
        .code(201)
        .send(ok(request, { user: await users.detailOf(row), email_delivery: emailDelivery }));
    },
  );

  const update = (method: 'put' | 'patch') =>
    app[method](
      '/api/v1/admin/users/:user_id',
      {
        config: rule,
        schema: {
          operationId: method === 'put' ? 'adminUpdateUser' : 'adminPatchUser',
          tags,
          summary:
            method === 'put'
              ? 'Update a user: e-mail, full name, roles, status (active | inactive), profile, preferences'
              : 'Partially update a user (same fields as PUT)',
          description: 'Fields left out keep their values. Deactivating a user ends their sessions at once.',
          params: UserIdParams,
          body: UpdateUserBody,
          response: { 200: Envelope(Type.Object({ user: UserDetail })), ...NotFound, ...Conflict },
        },
      },
      async (request) => {
        const row = await users.update(request.params.user_id, request.body, request);
        return ok(request, { user: await users.detailOf(row) });
      },
    );
  update('put');
  update('patch');

  app.post(
    '/api/v1/admin/users/:user_id/suspend',
    {
      config: rule,
      schema: {
        operationId: 'adminSuspendUser',
        tags,
        summary: 'Suspend a user: sessions and API keys stop at once; ends by itself after duration_days',
        params: UserIdParams,
        body: SuspendBody,
        response: {
          200: Envelope(Type.Object({ user: UserDetail, email_delivery: EmailDelivery })),
          ...NotFound,
          ...Conflict,
        },
      },
    },
    async (request) => {
      const { row, emailDelivery } = await users.suspend(request.params.user_id, request.body, request);
      return ok(request, { user: await users.detailOf(row), email_delivery: emailDelivery });
    },
  );

  app.post(
    '/api/v1/admin/users/:user_id/reset-password',
    {
      config: rule,
      schema: {
        operationId: 'adminResetPassword',
        tags,
        summary: "Set a temporary password; the user's sessions end",
        description:
          'When `temporary_password` is left out a random one is generated and returned once, in this ' +
          'response only. With `send_email` the password goes to the user over SMTP; with no SMTP configured ' +
          'the e-mail is logged without the password.',
        params: UserIdParams,
        body: ResetPasswordBody,
        response: {
          200: Envelope(
            Type.Object({
              user: UserDetail,
              email_delivery: EmailDelivery,
              temporary_password: Type.Optional(
                Type.String({ description: 'Only when generated by the server; never shown again' }),
              ),
            }),
          ),
          ...NotFound,
        },
      },
    },
    async (request) => {
      const result = await users.resetPassword(request.params.user_id, request.body, request);
      return ok(request, {
        user: await users.detailOf(result.row),
        email_delivery: result.emailDelivery,
        ...(result.generated ? { temporary_password: result.generated } : {}),
      });
    },
  );

  app.delete(
    '/api/v1/admin/users/:user_id',
    {
      config: rule,
      schema: {
        operationId: 'adminDeleteUser',
        tags,
        summary: 'Delete a user with their sessions and API keys (not yourself, not the last admin)',
        params: UserIdParams,
        response: { 200: MessageOnly, ...NotFound, ...Conflict },
      },
    },
    async (request) => {
      await users.delete(request.params.user_id, request);
      return done(request, `User ${request.params.user_id} deleted`);
    },
  );
}
