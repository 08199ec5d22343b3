import { Type } from '@sinclair/typebox';
import { Pagination, pagination } from '../http/envelope.js';
import { type ListQueryInput, userQueryOf } from './user-query.js';
import { UserListItem } from './user-schemas.js';
import type { UserService } from './user-service.js';
import { userListItem } from './user-views.js';

/** The data of a user listing, shared by the admin path and the resource API (same filters, same shape). */
export const UserListing = Type.Object({ users: Type.Array(UserListItem), pagination: Pagination });

export async function listUsers(users: UserService, input: ListQueryInput) {
  const query = userQueryOf(input);
  const { rows, total } = await users.list(query);
  return { users: rows.map(userListItem), pagination: pagination(query.page, query.perPage, total) };
}
