import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

describe('compressed answers', () => {
  let t: TestPlatform;
  let base: string;
  let token: string;
  beforeAll(async () => {
    t = await startPlatform();
    base = await t.platform.listen();
    token = await t.adminToken();
  });
  afterAll(async () => {
    await t.close();
  });

  it('sends the OpenAPI document gzip- or brotli-compressed to a client that accepts it', async () => {
    const plain = await fetch(`${base}/openapi.json`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    const document = Buffer.from(await plain.arrayBuffer());
    expect(document.length).toBeGreaterThan(500_000);

    for (const [encoding, inflate] of [
      ['gzip', gunzipSync],
      ['br', brotliDecompressSync],
    ] as const) {
      // undici's fetch decodes bodies itself; a raw request shows what went over the wire.
      const { request } = await import('undici');
      const answer = await request(`${base}/openapi.json`, { headers: { 'accept-encoding': encoding } });
      expect(answer.headers['content-encoding']).toBe(encoding);
      const wire = Buffer.from(await answer.body.arrayBuffer());
      expect(wire.length).toBeLessThan(document.length / 4);
      expect(inflate(wire).equals(document)).toBe(true);
    }
  });

  it('leaves small answers as they are', async () => {
    const { request } = await import('undici');
    const answer = await request(`${base}/api/v1/health`, { headers: { 'accept-encoding': 'gzip, br' } });
    expect(answer.headers['content-encoding']).toBeUndefined();
    expect(answer.statusCode).toBe(200);
    expect(await answer.body.json()).toBeTypeOf('object');
  });

  it('keeps server-sent events uncompressed and flowing for a client that accepts compression', async () => {
    const { request } = await import('undici');
    const controller = new AbortController();
    const stream = await request(`${base}/api/v1/events/stream?patterns=zip.*`, {
      headers: {
        authorization: `Bearer ${token}`,
        'accept-encoding': 'gzip, br',
        accept: 'text/event-stream',
      },
      signal: controller.signal,
    });
    expect(stream.headers['content-encoding']).toBeUndefined();
    const emitted = await t.request('POST', '/api/v1/events', {
      token,
      body: { event_type: 'zip.done', source: 'test', data: { n: 1 } },
    });
    expect(emitted.statusCode).toBe(201);
    let text = '';
    for await (const chunk of stream.body) {
      text += chunk.toString();
      if (text.includes('zip.done')) break;
    }
    controller.abort();
    expect(text).toContain('zip.done');
  });
});
