import { expect } from 'vitest';
import { eventually } from '../helpers/eventually.js';
import type { TestPlatform } from '../helpers/test-platform.js';

/** Fast retries and polling, so retry and recovery tests take milliseconds instead of minutes. */
export const FAST_WEBHOOKS = {
  webhooks: { retry_delay_scale: 0.001, poll_interval_ms: 50, default_timeout_seconds: 5 },
};

export async function createSubscription(
  t: TestPlatform,
  token: string,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string }> {
  const res = await t.request('POST', '/api/v1/events/subscriptions', { token, body });
  expect(res.statusCode, res.body).toBe(201);
  const sub = res.data.data.subscription;
  return { id: sub.subscription_id, secret: sub.webhook_config.secret };
}

export async function emit(t: TestPlatform, token: string, body: Record<string, unknown>): Promise<string> {
  const res = await t.request('POST', '/api/v1/events', { token, body });
  expect(res.statusCode, res.body).toBe(201);
  return res.data.data.event.event_id as string;
}

export async function getEvent(t: TestPlatform, token: string, id: string) {
  const res = await t.request('GET', `/api/v1/events/${id}`, { token });
  expect(res.statusCode, res.body).toBe(200);
  return res.data.data.event;
}

export async function getSubscription(t: TestPlatform, token: string, id: string) {
  const res = await t.request('GET', `/api/v1/events/subscriptions/${id}`, { token });
  expect(res.statusCode, res.body).toBe(200);
  return res.data.data.subscription;
}

/** Waits until `check` holds, failing the test with `what` when it never does. */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 10_000,
): Promise<void> {
  const held = await eventually(async () => check(), ms);
  expect(held, `timed out waiting for ${what}`).toBe(true);
}
