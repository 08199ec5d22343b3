import createClient, { type Client, type ClientOptions } from 'openapi-fetch';
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

export type PlatformClient = Client<paths>;

/**
 * A typed client of the platform's HTTP interface: paths, parameters, bodies and responses are checked by the
 * compiler against the OpenAPI document the types were generated from.
 *
 * @example
 * ```ts
 * import { createPlatformClient } from 'platform/client';
 * const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080', token });
 * const { data, error } = await api.GET('/api/v1/events/{event_id}', { params: { path: { event_id: id } } });
 * if (data) console.log(data.data.event.event_type);
 * ```
 */
export function createPlatformClient(options: PlatformClientOptions): PlatformClient {
  const { token, apiKey, headers, ...rest } = options;
  return createClient<paths>({
    ...rest,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(apiKey ? { 'x-api-key': apiKey } : {}),
      ...(headers as Record<string, string> | undefined),
    },
  });
}
