import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { hasPermission } from '../auth/principal.js';
import { access } from '../http/access.js';
import { AppError } from '../http/app-error.js';
import type { App } from '../http/app-type.js';
import { done, Envelope, MessageOnly, ok } from '../http/envelope.js';
import { listUsers, UserListing } from './user-listing.js';
import {
  CreateUserBody,
  EmailDelivery,
  ResourceUser,
  UpdateUserBody,
  UserIdParams,
  UserListQuery,
} from './user-schemas.js';
import type { UserService } from './user-service.js';
import type { UserRow } from './user-store.js';
import { userSummary } from './user-views.js';

const tags = ['users'];
const NotFound = { 404: { $ref: 'ErrorEnvelope#' } };
const Conflict = { 409: { $ref: 'ErrorEnvelope#' } };

const denied = (permission: string) =>
  new AppError('AUTHORIZATION_DENIED', `Permission '${permission}' is required`, {
    details: { required_permission: permission },
  });

/**
 * `/api/v1/users`: the resource API (decisions §2). Listing needs read:users, creating and deleting
 * write:users; a user may always read and update themselves (not their own roles or status).
 */
export function registerUserResourceRoutes(app: App, deps: { users: UserService }): void {
  const { users } = deps;
  const isSelf = (request: FastifyRequest, id: string) => request.principal?.userId === id;

  /** Sessions and API keys are shown to the user themselves and to user administrators only. */
  const view = async (request: FastifyRequest, row: UserRow) => {
    const p = request.principal!;
    if (isSelf(request, row.id) || (p.isAdmin && hasPermission(p, 'admin:users'))) return users.detailOf(row);
    return userSummary(row);
  };

  app.get(
    '/api/v1/users',
    {
      config: { access: access.permission('read:users') },
      schema: {
        operationId: 'listUsers',
        tags,
        summary: 'List users (same filters as the admin listing)',
        querystring: UserListQuery,
        response: {
          200: Envelope(UserListing),
        },
      },
    },
    async (request) => ok(request, await listUsers(users, request.query)),
  );

  app.post(
    '/api/v1/users',
    {
      config: { access: access.permission('write:users'), idempotent: true },
      schema: {
        operationId: 'createUser',
        tags,
        summary: 'Create a user (granting the admin role needs an administrator)',
        body: CreateUserBody,
        response: {
          201: Envelope(Type.Object({ user: ResourceUser, email_delivery: EmailDelivery })),
          ...Conflict,
        },
      },
    },
    async (request, reply) => {
      const { row, emailDelivery } = await users.create(request.body, request);
      return reply
        .code(201)
        .send(ok(request, { user: await view(request, row), email_delivery: emailDelivery }));
    },
  );

  app.get(
    '/api/v1/users/:user_id',
    {
      config: { access: access.authenticated() },
      schema: {
        operationId: 'getUser',
        tags,
        summary: 'Read a user: yourself always, others with read:users',
        params: UserIdParams,
        response: { 200: Envelope(Type.Object({ user: ResourceUser })), ...NotFound },
      },
    },
    async (request) => {
      const id = request.params.user_id;
      if (!isSelf(request, id) && !hasPermission(request.principal!, 'read:users'))
        throw denied('read:users');
      return ok(request, { user: await view(request, await users.get(id)) });
    },
  );

  const update = (method: 'put' | 'patch') =>
    app[method](
      '/api/v1/users/:user_id',
      {
        config: { access: access.authenticated() },
        schema: {
          operationId: method === 'put' ? 'updateUser' : 'patchUser',
          tags,
          summary:
            method === 'put'
              ? 'Update a user: yourself always (not your roles or status), others with write:users'
              : 'Partially update a user (same rules as PUT)',
          description: 'Fields left out keep their values.',
          params: UserIdParams,
          body: UpdateUserBody,
          response: { 200: Envelope(Type.Object({ user: ResourceUser })), ...NotFound, ...Conflict },
        },
      },
      async (request) => {
        const id = request.params.user_id;
        const self = isSelf(request, id);
        if (!self && !hasPermission(request.principal!, 'write:users')) throw denied('write:users');
        const row = await users.update(id, request.body, request, self);
        return ok(request, { user: await view(request, row) });
      },
    );
  update('put');
  update('patch');

  app.delete(
    '/api/v1/users/:user_id',
    {
      config: { access: access.permission('write:users') },
      schema: {
        operationId: 'deleteUser',
        tags,
        summary: 'Delete a user (not yourself, not the last admin)',
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
