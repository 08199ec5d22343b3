import { createServer, type Server, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';

/**
 * A component whose health check never answers (here an SMTP server that accepts and then says nothing,
 * nodemailer waiting up to mail.timeout_seconds for its greeting) must not hold the scrape, the status or the services API: the checks run side by side,
 * each cut off after the health timeout (5 s) and reported unhealthy.
 */
describe('metrics and status with a component that never answers', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let silent: Server;
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    silent = createServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as { port: number };
    // nodemailer's own timeouts at their longest (mail.timeout_seconds): only the health timeout can end the wait.
    t = await startPlatform({ mail: { smtp_url: `smtp://127.0.0.1:${port}`, timeout_seconds: 120 } });
    admin = await t.adminToken();
  }, 60_000);
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await t.close();
  }, 60_000);

  /** The request's answer and how long it took, in ms. */
  const timed = async (url: string) => {
    const started = performance.now();
    const res = await t.request('GET', url, { token: admin });
    return { res, ms: performance.now() - started };
  };

  it('answers GET /metrics within the health timeout, the silent component unhealthy', async () => {
    const { res, ms } = await timed('/metrics');
    expect(res.statusCode, res.body).toBe(200);
    // The health timeout is 5 s; nodemailer would wait 120 s (past this test's own timeout).
    expect(ms).toBeLessThan(20_000);
    expect(sockets.size).toBeGreaterThan(0);
    expect(res.body).toContain('platform_component_status{component="mailer",status="unhealthy"} 1');
    expect(res.body).toContain('platform_component_status{component="database",status="healthy"} 1');
  });

  it('answers GET /api/v1/status within the health timeout, the silent component unhealthy', async () => {
    const { res, ms } = await timed('/api/v1/status?format=short');
    expect(res.statusCode, res.body).toBe(200);
    expect(ms).toBeLessThan(20_000);
    expect(res.data.data.components.mailer).toBe('unhealthy');
    expect(res.data.data.components.database).toBe('healthy');
  });

  it('answers GET /api/v1/services/mailer within the health timeout, the silent component unhealthy', async () => {
    const { res, ms } = await timed('/api/v1/services/mailer');
    expect(res.statusCode, res.body).toBe(200);
    expect(ms).toBeLessThan(20_000);
    expect(res.data.data.health).toBe('unhealthy');
  });
});
