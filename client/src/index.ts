import createClient, { type ClientOptions, type FetchResponse, type MaybeOptionalInit } from 'openapi-fetch';
import type { paths } from './openapi-types.js';

export type { components, operations, paths } from './openapi-types.js';

/** Options of {@link createPlatformClient}: where the platform is, and which credential to send. */
export interface PlatformClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** The platform's address, e.g. `http://127.0.0.1:8080`. */
  baseUrl: string;
  /** An access token (sent as `Authorization: Bearer …`). */
  token?: string;
  /** An API key (sent as `X-API-Key`). */
  apiKey?: string;
}

type Method = 'get' | 'put' | 'post' | 'delete' | 'patch';
/** The paths that have the method (openapi-typescript writes `method?: never` for the others). */
type PathsWith<M extends Method> = {
  [P in keyof paths]: paths[P] extends { [K in M]: unknown } ? P : never;
}[keyof paths];
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/**
 * One method of the client. Unlike openapi-fetch's own, the request's options are typed by the path alone
 * (not inferred from the argument), so an object literal is checked for excess properties: a misspelled
 * field of a body, a query or path parameter is a compile error, not a silently ignored key.
 */
export type PlatformMethod<M extends Method> = <P extends PathsWith<M>>(
  url: P,
  ...init: RequiredKeys<NonNullable<Init<P, M>>> extends never ? [Init<P, M>?] : [Init<P, M>]
) => Promise<
  FetchResponse<paths[P][M] & Record<string | number, unknown>, Init<P, M>, `${string}/${string}`>
>;

export interface PlatformClient {
  GET: PlatformMethod<'get'>;
  POST: PlatformMethod<'post'>;
  PUT: PlatformMethod<'put'>;
  PATCH: PlatformMethod<'patch'>;
  DELETE: PlatformMethod<'delete'>;
}

/**
 * A typed client of the platform's HTTP interface: paths, parameters, bodies and responses are checked by the
 * compiler against the OpenAPI document the types were generated from.
 *
 * @example
 * ```ts
 * import { createPlatformClient } from 'platform-client';
 * const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', token });
 * const { data, error } = await api.GET('/api/v1/events/{event_id}', { params: { path: { event_id: id } } });
 * if (data) console.log(data.data.event.event_type);
 * ```
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const { token, apiKey, headers, ...rest } = options;
  // The same requests as openapi-fetch's client; only the methods' types are stricter.
  return createClient<paths>({
    ...rest,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(apiKey ? { 'x-api-key': apiKey } : {}),
      ...(headers as Record<string, string> | undefined),
    },
  }) as unknown as PlatformClient;
}
