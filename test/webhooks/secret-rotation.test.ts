import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { type Received, Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, until } from './webhook-fixtures.js';

/** The Standard Webhooks signatures of a request that verify with `secret` (of every `v1,` entry). */
function standardVerifies(req: Received, secret: string): boolean {
  const id = String(req.headers['webhook-id']);
  const ts = String(req.headers['webhook-timestamp']);
  const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${id}.${ts}.${req.body}`, 'utf8')
    .digest('base64');
  return String(req.headers['webhook-signature'])
    .split(' ')
    .some((s) => s === `v1,${expected}`);
}

const hex = (secret: string, body: string) =>
  `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;

describe('signing-secret rotation', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let ann: { id: string; access: string };
  let bob: { id: string; access: string };
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform(FAST_WEBHOOKS);
    admin = await t.adminToken();
    ann = await t.createUser('ann');
    bob = await t.createUser('bob');
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const rotate = (id: string, body: Record<string, unknown>, token = ann.access) =>
    t.request('POST', `/api/v1/events/subscriptions/${id}/secret/rotate`, { token, body });

  /** Emits one event and answers the request that delivered it. */
  const deliveredRequest = async (path: string, type: string): Promise<Received> => {
    const eventId = await emit(t, ann.access, { event_type: type, data: { n: 1 } });
    let got: Received | undefined;
    await until(() => {
      got = receiver.at(path).find((r) => r.json?.event_id === eventId || r.json?.id === eventId);
      return got !== undefined;
    }, `the delivery of ${eventId}`);
    return got!;
  };

  it('signs with both secrets during the overlap and never shows the old one again', async () => {
    const old = 'old-secret-0123456789';
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['rot.*'],
      webhook_config: { url: `${receiver.url}/rot`, secret: old },
    });
    const res = await rotate(sub.id, {});
    expect(res.statusCode, res.body).toBe(200);
    const data = res.data.data;
    const fresh = data.secret as string;
    expect(fresh.length).toBeGreaterThanOrEqual(16);
    expect(data.subscription.webhook_config.secret).toBe('********');
    const expires = Date.parse(data.previous_secret_expires_at);
    expect(Math.abs(expires - (Date.now() + 24 * 3_600_000))).toBeLessThan(60_000);
    expect(res.body).not.toContain(old);

    const req = await deliveredRequest('/rot', 'rot.one');
    expect(String(req.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(standardVerifies(req, fresh)).toBe(true);
    expect(standardVerifies(req, old)).toBe(true);
    expect(req.headers['x-platform-signature-256']).toBe(hex(fresh, req.body));
    expect(req.headers['x-platform-signature-256-previous']).toBe(hex(old, req.body));

    // Nowhere in the API afterwards: the subscription, the list, the audit log.
    for (const url of [`/api/v1/events/subscriptions/${sub.id}`, '/api/v1/events/subscriptions']) {
      const read = await t.request('GET', url, { token: ann.access });
      expect(read.statusCode).toBe(200);
      expect(read.body).not.toContain(old);
      expect(read.body).not.toContain(fresh);
    }
    const audit = await t.request('GET', '/api/v1/admin/audit-log?action=subscription.secret_rotated', {
      token: admin,
    });
    expect(audit.statusCode, audit.body).toBe(200);
    const entries = JSON.stringify(audit.data.data);
    expect(entries).toContain(sub.id);
    expect(entries).not.toContain(old);
    expect(entries).not.toContain(fresh);
  });

  it('signs with the new secret alone once the overlap is over, or with none', async () => {
    const old = 'first-secret-abcdefgh';
    const chosen = 'second-secret-ijklmnop';
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['end.*'],
      webhook_config: { url: `${receiver.url}/end`, secret: old },
    });
    // 0.0005 h = 1.8 s of overlap.
    const res = await rotate(sub.id, { secret: chosen, overlap_hours: 0.0005 });
    expect(res.statusCode, res.body).toBe(200);
    // A secret the caller chose is not echoed.
    expect(res.data.data.secret).toBeUndefined();
    expect(res.body).not.toContain(chosen);
    const during = await deliveredRequest('/end', 'end.during');
    expect(standardVerifies(during, old)).toBe(true);
    expect(standardVerifies(during, chosen)).toBe(true);
    await new Promise((r) =>
      setTimeout(r, Math.max(0, Date.parse(res.data.data.previous_secret_expires_at) - Date.now()) + 200),
    );
    const after = await deliveredRequest('/end', 'end.after');
    expect(String(after.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(standardVerifies(after, chosen)).toBe(true);
    expect(standardVerifies(after, old)).toBe(false);
    expect(after.headers['x-platform-signature-256']).toBe(hex(chosen, after.body));
    expect(after.headers['x-platform-signature-256-previous']).toBeUndefined();

    // overlap_hours: 0 replaces the secret at once.
    const third = 'third-secret-qrstuvwx';
    const now = await rotate(sub.id, { secret: third, overlap_hours: 0 });
    expect(now.statusCode, now.body).toBe(200);
    expect(now.data.data.previous_secret_expires_at).toBeNull();
    const only = await deliveredRequest('/end', 'end.only');
    expect(String(only.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(standardVerifies(only, third)).toBe(true);
    expect(standardVerifies(only, chosen)).toBe(false);
  });

  it("is refused for someone else's subscription and for bad input", async () => {
    const sub = await createSubscription(t, ann.access, {
      event_patterns: ['own.*'],
      webhook_config: { url: `${receiver.url}/own` },
    });
    expect((await rotate(sub.id, {}, bob.access)).statusCode).toBe(404);
    expect((await rotate('sub_missing', {})).statusCode).toBe(404);
    expect((await rotate(sub.id, { secret: 'short' })).statusCode).toBe(422);
    expect((await rotate(sub.id, { overlap_hours: 721 })).statusCode).toBe(422);
    // An admin may rotate anyone's.
    expect((await rotate(sub.id, {}, admin)).statusCode).toBe(200);
  });
});
