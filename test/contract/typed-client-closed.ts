/**
 * Compiled by `npm run typecheck` (never run): each misspelled field below must stay a type error, or the
 * unused `@ts-expect-error` fails the type-check. openapi-fetch's own methods accept any extra key.
 */
import { createPlatformClient } from '../../client/src/index.js';

const api = createPlatformClient({ baseUrl: 'http://127.0.0.1:8080' });

export async function misspelledFieldsDoNotCompile(): Promise<void> {
  // @ts-expect-error `priorty` is not a field of an event
  await api.POST('/api/v1/events', { body: { event_type: 'a.b', source: 's', data: {}, priorty: 5 } });
  await api.POST('/api/v1/events/subscriptions', {
    body: {
      name: 'x',
      event_patterns: ['a.*'],
      // @ts-expect-error `secrett` is not a field of webhook_config
      webhook_config: { url: 'https://example.com/hook', secrett: 'a' },
    },
  });
  // @ts-expect-error `per_pagee` is not a query parameter of the event list
  await api.GET('/api/v1/events', { params: { query: { per_pagee: 3 } } });
  // @ts-expect-error a body is required: login without one does not compile
  await api.POST('/api/v1/auth/login');
  const login = await api.POST('/api/v1/auth/login', { body: { username: 'admin', password: 'secret' } });
  const token: string | undefined = login.data?.data.access_token;
  void token;
}
