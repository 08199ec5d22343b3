import { eventually } from './eventually.js';
import type { TestPlatform } from './test-platform.js';

/**
 * Resolves once instance `to` hears announcements published by `from`. A freshly started instance subscribes
 * to Redis asynchronously; a probe subscribed after its own channels proves those are live (Redis handles one
 * connection's commands in order), so a test does not race the instance's start.
 */
export async function untilListening(from: TestPlatform, to: TestPlatform): Promise<void> {
  let heard = false;
  const stop = to.platform.context.shared.subscribe('test.sync', () => {
    heard = true;
  });
  try {
    const ok = await eventually(async () => {
      await from.platform.context.shared.publish('test.sync', {});
      return heard;
    }, 10_000);
    if (!ok) throw new Error('the second instance never heard the first one');
  } finally {
    stop();
  }
}
