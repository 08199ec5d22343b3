import type { UserQuery, UserSort } from './user-store.js';

export interface ListQueryInput {
  page?: number | undefined;
  per_page?: number | undefined;
  search?: string | undefined;
  role?: string | undefined;
  status?: string | undefined;
  created_after?: string | undefined;
  sort?: UserSort | undefined;
  order?: 'asc' | 'desc' | undefined;
}

/** The validated query string of a user listing → the store's query. Dates become comparable ISO text. */
export function userQueryOf(q: ListQueryInput): UserQuery {
  const search = q.search?.trim();
  return {
    page: q.page ?? 1,
    perPage: q.per_page ?? 20,
    search: search ? search : undefined,
    role: q.role,
    status: q.status,
    // Stored timestamps are UTC ISO text; any offset in the filter is normalised so text order is time order.
    createdAfter: q.created_after === undefined ? undefined : new Date(q.created_after).toISOString(),
    sort: q.sort ?? 'created_at',
    order: q.order ?? 'desc',
  };
}
