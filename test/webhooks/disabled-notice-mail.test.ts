import type { AddressInfo } from 'node:net';
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getSubscription, until } from './webhook-fixtures.js';

/** An SMTP server that accepts connections and never says a word (no greeting): a relay that hangs. */
async function startSilentSmtp() {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    connections: () => connections,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the e-mail of a subscription put in error, with an SMTP server that never answers', {
  timeout: 60_000,
}, () => {
  let t: TestPlatform;
  let smtp: Awaited<ReturnType<typeof startSilentSmtp>>;
  let receiver: Receiver;
  let ann: { id: string; access: string };

  beforeAll(async () => {
    smtp = await startSilentSmtp();
    // The mailer waits this long for the greeting: far longer than the check below allows.
    t = await startPlatform({ ...FAST_WEBHOOKS, mail: { smtp_url: smtp.url, timeout_seconds: 120 } });
    ann = await t.createUser('ann');
    receiver = new Receiver();
    await receiver.start();
    receiver.respond = (req) => ({ status: req.path === '/gone' ? 410 : 200 });
  });
  afterAll(async () => {
    // First: the pending e-mail's connection ends, so nothing waits on it.
    await smtp.close();
    await t.close();
    await receiver.close();
  });

  it("does not hold up the recording of other subscriptions' deliveries", async () => {
    const gone = await createSubscription(t, ann.access, {
      event_patterns: ['gone.*'],
      webhook_config: { url: `${receiver.url}/gone` },
    });
    const healthy = await createSubscription(t, ann.access, {
      event_patterns: ['fine.*'],
      webhook_config: { url: `${receiver.url}/healthy` },
    });
    // 410 Gone: the subscription goes to error at once, and its owner (with an e-mail address) is told.
    await emit(t, ann.access, { event_type: 'gone.first', data: {} });
    await until(
      async () => (await getSubscription(t, ann.access, gone.id)).status === 'error',
      'the gone subscription to be put in error',
    );
    await until(() => smtp.connections() > 0, 'the e-mail to its owner to be under way');

    // Its e-mail is still waiting for the server's greeting; the other subscription's results are written.
    for (let n = 1; n <= 3; n++) await emit(t, ann.access, { event_type: 'fine.next', data: { n } });
    await until(
      async () => (await getSubscription(t, ann.access, healthy.id)).events_delivered === 3,
      "the healthy subscription's deliveries to be recorded",
      15_000,
    );
    expect(receiver.requests.filter((r) => r.path === '/healthy')).toHaveLength(3);
  });
});
