import { afterEach, describe, expect, it } from 'vitest';
import { startPlatform } from '../helpers/test-platform.js';
import { startSmtpSink } from '../mail/smtp-sink.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getSubscription, until } from './webhook-fixtures.js';

/**
 * The e-mail to a subscription's owner is queued (the delivery recorder does not wait for it). A platform that
 * stops gracefully sends what is queued before it has stopped: the process exits right after.
 */
describe('queued e-mails when the platform stops', { timeout: 60_000 }, () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  });

  /**
   * A platform whose SMTP server holds its answer to each message until `release()`; ann's subscription is put
   * in error (410 Gone) and her e-mail reaches the server, held there; then bob's is put in error, and his
   * e-mail waits in the queue behind hers.
   */
  async function twoQueuedMails(mail: Record<string, unknown>, logLines?: Record<string, unknown>[]) {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const sink = await startSmtpSink({ hold: () => held });
    cleanups.push(() => sink.close());
    cleanups.push(() => release());
    const receiver = new Receiver();
    await receiver.start();
    cleanups.push(() => receiver.close());
    receiver.respond = () => ({ status: 410 });
    const t = await startPlatform(
      { ...FAST_WEBHOOKS, mail: { smtp_url: sink.url, ...mail }, logging: { level: 'info' } },
      logLines ? { logStream: { write: (line: string) => void logLines.push(JSON.parse(line)) } } : {},
    );
    cleanups.push(() => t.close());
    const admin = await t.adminToken();
    for (const name of ['ann', 'bob']) {
      const user = await t.createUser(name);
      const sub = await createSubscription(t, user.access, {
        event_patterns: [`${name}.*`],
        webhook_config: { url: `${receiver.url}/gone` },
      });
      await emit(t, user.access, { event_type: `${name}.first`, data: {} });
      await until(
        async () => (await getSubscription(t, user.access, sub.id)).status === 'error',
        `${name}'s subscription to be put in error`,
      );
      // Announced just before its e-mail is queued.
      await until(async () => {
        const res = await t.request('GET', '/api/v1/events?event_type=webhook.subscription.disabled', {
          token: admin,
        });
        return res.data.data.events.length === (name === 'ann' ? 1 : 2);
      }, `the webhook.subscription.disabled event of ${name}`);
      if (name === 'ann') await sink.waitFor('ann@example.test');
    }
    expect(sink.received.map((m) => m.to)).toEqual([['ann@example.test']]);
    return { t, sink, release };
  }

  it('sends them before the platform has stopped', async () => {
    const { t, sink, release } = await twoQueuedMails({ timeout_seconds: 30 });
    // The server answers once the mailer is stopping: a mailer that does not wait for its queue has stopped by
    // then (in the same turn), and the server never answers before the platform has stopped.
    const registry = t.platform.context.registry;
    const watch = setInterval(() => {
      if (registry.state('mailer') === 'stopping') release();
    }, 5);
    cleanups.push(() => clearInterval(watch));
    await t.close();
    expect(sink.received.map((m) => m.to)).toEqual([['ann@example.test'], ['bob@example.test']]);
    expect(sink.received[1]!.subject).toMatch(/Webhook subscription paused/);
  });

  it('waits for them at most mail.timeout_seconds, then logs how many were not sent (a count, no address)', async () => {
    const lines: Record<string, unknown>[] = [];
    const { t } = await twoQueuedMails({ timeout_seconds: 1 }, lines);
    const started = Date.now();
    await t.close();
    // The budget, and no more than a moment besides (the rest of the stop).
    expect(Date.now() - started).toBeLessThan(1000 + 3000);
    const unsent = lines.filter((l) => l['unsent'] !== undefined);
    expect(unsent).toHaveLength(1);
    expect(unsent[0]).toMatchObject({ component: 'mailer', msg: expect.stringMatching(/not sent/) });
    // Bob's at least (ann's may have timed out at the server already, and counts as failed).
    expect(unsent[0]!['unsent']).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(unsent[0])).not.toContain('example.test');
  });
});
