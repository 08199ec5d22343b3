/**
 * A Receiver (receiver.ts) in a process of its own, for tests that time arrivals: the platform under test shares
 * the test's process and event loop, and a request it sends while that loop is busy would be timed late there.
 * Sends `{url}` once listening, then `{path, at, event_id, attempt, deliveries}` for every request (`deliveries`:
 * a batch's delivery ids) (`at`: this process's
 * performance.now()). Started by receiver-process.ts.
 */
import { Receiver } from './receiver.js';

const receiver = new Receiver();
await receiver.start();
receiver.respond = (req) => {
  const batch: { delivery_id: string }[] | undefined = req.json?.events;
  process.send?.({
    path: req.path,
    at: req.at,
    event_id: req.json?.event_id,
    attempt: req.json?.attempt,
    deliveries: batch?.map((e) => e.delivery_id),
  });
  return {};
};
process.send?.({ url: receiver.url });
process.on('disconnect', () => {
  receiver
    .close()
    .catch(() => {})
    .finally(() => process.exit(0));
});
