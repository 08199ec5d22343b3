import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedConnector, refusedKind, TargetRefusedError } from '../../src/webhooks/target-guard.js';
import { startPlatform, type TestPlatform } from '../helpers/test-platform.js';
import { Receiver } from './receiver.js';
import { createSubscription, emit, FAST_WEBHOOKS, getEvent, until } from './webhook-fixtures.js';

describe('webhook targets on private addresses', { timeout: 30_000 }, () => {
  let t: TestPlatform;
  let admin: string;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await startPlatform({
      ...FAST_WEBHOOKS,
      webhooks: { ...FAST_WEBHOOKS.webhooks, allow_private_targets: false },
    });
    admin = await t.adminToken();
    receiver = new Receiver();
    await receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  it('refuses loopback targets — by address and by a name resolving to one — and records why', async () => {
    const port = new URL(receiver.url).port;
    for (const [path, url] of [
      ['/literal', `http://127.0.0.1:${port}/literal`],
      ['/named', `http://localhost:${port}/named`],
      ['/v6', `http://[::1]:${port}/v6`],
    ] as const) {
      await createSubscription(t, admin, {
        event_patterns: [`ssrf${path.replace('/', '.')}`],
        webhook_config: { url, retry_policy: { max_attempts: 5 } },
      });
      const id = await emit(t, admin, { event_type: `ssrf${path.replace('/', '.')}` });
      await until(async () => (await getEvent(t, admin, id)).status === 'failed', `refusal of ${url}`);
      const attempts = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
      // Refused at once: retrying cannot help while the configuration forbids the target.
      expect(attempts).toHaveLength(1);
      expect(attempts[0]).toMatchObject({ status: 'failed', response_status: null });
      expect(attempts[0].error).toMatch(/^WEBHOOK_DELIVERY_FAILED: refused: target .*loopback address/);
      expect(attempts[0].error).toMatch(/webhooks\.allow_private_targets/);
    }
    expect(receiver.requests).toHaveLength(0);
  });

  it('refuses an IPv4-compatible IPv6 literal (::127.0.0.1, which a URL spells [::7f00:1]) before connecting', async () => {
    const port = new URL(receiver.url).port;
    await createSubscription(t, admin, {
      event_patterns: ['ssrf.compat'],
      webhook_config: { url: `http://[::127.0.0.1]:${port}/compat`, retry_policy: { max_attempts: 5 } },
    });
    const id = await emit(t, admin, { event_type: 'ssrf.compat' });
    await until(async () => (await getEvent(t, admin, id)).status === 'failed', 'the refusal');
    const attempts = (await getEvent(t, admin, id)).delivery_info.delivery_attempts;
    expect(attempts).toHaveLength(1);
    expect(attempts[0].error).toMatch(
      /^WEBHOOK_DELIVERY_FAILED: refused: target ::7f00:1 is a IPv4-compatible IPv6 address/,
    );
    expect(refusedKind('::7f00:1')).toBe('IPv4-compatible IPv6');
    expect(refusedKind('::808:808')).toBe('IPv4-compatible IPv6');
  });

  it('delivers once the configuration allows private targets', async () => {
    const put = await t.request('PUT', '/api/v1/config', {
      token: admin,
      body: { webhooks: { allow_private_targets: true } },
    });
    expect(put.statusCode, put.body).toBe(200);
    await createSubscription(t, admin, {
      event_patterns: ['ssrf.allowed'],
      webhook_config: { url: `${receiver.url}/allowed` },
    });
    const id = await emit(t, admin, { event_type: 'ssrf.allowed' });
    await until(() => receiver.at('/allowed').length === 1, 'the delivery');
    expect(receiver.at('/allowed')[0]!.json.event_id).toBe(id);
  });

  it('classifies every private, local and special range as refused, and public unicast as allowed', () => {
    const refused: Record<string, string> = {
      '127.0.0.1': 'loopback',
      '::1': 'loopback',
      '10.1.2.3': 'private',
      '172.16.5.4': 'private',
      '192.168.0.10': 'private',
      'fc00::1': 'private',
      '100.64.0.1': 'private (carrier-grade NAT)',
      '169.254.10.10': 'link-local',
      'fe80::1': 'link-local',
      '169.254.169.254': 'metadata',
      'fd00:ec2::254': 'metadata',
      '0.0.0.0': 'unspecified',
      '::': 'unspecified',
      '::ffff:127.0.0.1': 'IPv4-mapped IPv6',
      '::ffff:8.8.8.8': 'IPv4-mapped IPv6',
    };
    for (const [address, kind] of Object.entries(refused)) expect(refusedKind(address), address).toBe(kind);
    for (const address of ['64:ff9b::7f00:1', '2002:7f00:1::', '224.0.0.1', '255.255.255.255'])
      expect(refusedKind(address), address).toBeDefined();
    for (const address of ['8.8.8.8', '93.184.216.34', '2606:4700:4700::1111'])
      expect(refusedKind(address), address).toBeUndefined();
  });

  it('checks the address actually connected to, so a name that passed resolution cannot rebind to loopback', async () => {
    // The first check (at resolution) is allowed, the second (on the connected socket) is not: what DNS
    // rebinding between the two would look like.
    let checks = 0;
    const connect = guardedConnector(() => checks++ === 0, 2000);
    const { port } = new URL(receiver.url);
    const outcome = await new Promise<{ err: Error | null; socket: Socket | null }>((resolve) => {
      connect({ hostname: 'localhost', protocol: 'http:', port }, (err, socket) =>
        resolve({ err, socket: socket as Socket | null }),
      );
    });
    expect(checks).toBe(2);
    expect(outcome.socket).toBeNull();
    expect(outcome.err).toBeInstanceOf(TargetRefusedError);
    expect(outcome.err?.message).toMatch(/loopback/);
  });
});
