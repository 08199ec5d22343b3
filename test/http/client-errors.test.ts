import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/** Sends raw bytes and reads everything until the server closes the connection. */
function rawHttp(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(request));
    let data = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk) => {
      data += chunk;
    });
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
}

// Requests Node's HTTP parser refuses before any route runs, sent over a real socket.
describe('requests the HTTP parser refuses', () => {
  let t: TestPlatform;
  let port: number;
  beforeAll(async () => {
    t = await startPlatform();
    port = Number(new URL(await t.platform.listen()).port);
  });
  afterAll(async () => {
    await t.close();
  });

  const answer = (raw: string) => {
    const [head, body] = raw.split('\r\n\r\n');
    return { status: Number(head!.split(' ')[1]), head: head!, body: JSON.parse(body!) };
  };

  it('answers headers over the size limit with 431 in the error envelope', async () => {
    const raw = await rawHttp(
      port,
      `GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    const { status, head, body } = answer(raw);
    expect(status).toBe(431);
    expect(head).toMatch(/content-type: application\/json/i);
    expect(body).toMatchObject({
      success: false,
      error: { code: 'VALIDATION_ERROR', details: { field: 'headers', reason: 'too large' } },
    });
    expect(body.request_id).toMatch(/^req_/);
  });

  it('answers a malformed header with 400 in the error envelope', async () => {
    const raw = await rawHttp(port, 'GET /api/v1/health HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n');
    const { status, body } = answer(raw);
    expect(status).toBe(400);
    expect(body).toMatchObject({ success: false, error: { code: 'VALIDATION_ERROR' } });
    expect(typeof body.timestamp).toBe('string');
  });
});
