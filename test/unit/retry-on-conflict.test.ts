import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { App } from '../../src/http/app-type.js';
import { registerErrorHandling } from '../../src/http/error-handler.js';
import { retryOnConflict } from '../../src/storage/retry-on-conflict.js';

/** What pg throws when PostgreSQL aborts a transaction for a deadlock. */
const deadlock = () => Object.assign(new Error('deadlock detected'), { code: '40P01' });

describe('PostgreSQL conflict aborts', () => {
  it('runs the work again after a deadlock, and gives up after the last attempt', async () => {
    let calls = 0;
    const answer = await retryOnConflict(async () => {
      calls += 1;
      if (calls < 3) throw deadlock();
      return 'done';
    });
    expect([answer, calls]).toEqual(['done', 3]);

    calls = 0;
    await expect(
      retryOnConflict(async () => {
        calls += 1;
        throw deadlock();
      }, 2),
    ).rejects.toMatchObject({ code: '40P01' });
    expect(calls).toBe(2);
  });

  it('does not run the work again for any other error', async () => {
    let calls = 0;
    await expect(
      retryOnConflict(async () => {
        calls += 1;
        throw Object.assign(new Error('duplicate key'), { code: '23505' });
      }),
    ).rejects.toMatchObject({ code: '23505' });
    expect(calls).toBe(1);
  });

  it('answers one that reaches a request with 503 SERVICE_UNAVAILABLE and Retry-After, not 500', async () => {
    const app = Fastify({ logger: false }) as unknown as App;
    registerErrorHandling(app);
    app.get('/conflict', async () => {
      throw deadlock();
    });
    const res = await app.inject({ method: 'GET', url: '/conflict' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json()).toMatchObject({ success: false, error: { code: 'SERVICE_UNAVAILABLE' } });
    expect(res.body).not.toContain('deadlock');
    await app.close();
  });
});
