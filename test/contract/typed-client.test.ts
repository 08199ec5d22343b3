import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createPlatformClient } from '../../client/src/index.js';
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/generate-client-types.js';
import { openapiCommand } from '../../src/cli/openapi-command.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

describe('the typed client', () => {
  let t: TestPlatform;
  let baseUrl: string;
  beforeAll(async () => {
    t = await startPlatform();
    baseUrl = await t.platform.listen();
  });
  afterAll(async () => {
    await t.close();
  });

  it('has types generated from the current OpenAPI document (else: npm run client:generate)', async () => {
    let printed = '';
    const code = await openapiCommand({ env: {}, cwd: tmpdir() }, (text) => {
      printed += text;
    });
    expect(code).toBe(0);
    const fresh = await generateClientTypes(JSON.parse(printed));
    const committed = readFileSync(CLIENT_TYPES_FILE, 'utf8');
    // A plain equality would print 30 000 lines on failure; the message says what to do instead.
    expect(committed === fresh, 'client/src/openapi-types.ts is stale: run `npm run client:generate`').toBe(
      true,
    );
  });

  it('talks to a running platform with typed paths, parameters and bodies', async () => {
    const anonymous = createPlatformClient({ baseUrl });
    const login = await anonymous.POST('/api/v1/auth/login', {
      body: { username: 'admin', password: 'admin-password-1' },
    });
    expect(login.response.status).toBe(200);
    const token = login.data?.data.access_token as string;
    const api = createPlatformClient({ baseUrl, token });
    const emitted = await api.POST('/api/v1/events', {
      body: { event_type: 'client.tested', source: 'typed-client', data: { n: 1 } },
    });
    expect(emitted.response.status).toBe(201);
    const eventId = emitted.data?.data.event.event_id as string;
    const read = await api.GET('/api/v1/events/{event_id}', { params: { path: { event_id: eventId } } });
    expect(read.data?.data.event.event_type).toBe('client.tested');
    const missing = await api.GET('/api/v1/events/{event_id}', {
      params: { path: { event_id: 'evt_client_unknown' } },
    });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe('EVENT_NOT_FOUND');
  });
});
