import type { BootConfig } from '../config/load-config.js';
import { createPlatform } from '../server.js';

/**
 * Runs the platform until SIGTERM or SIGINT, then stops gracefully: no new connections, in-flight requests
 * answered, services stopped in reverse order. Resolves to the exit code: 0 after a clean stop, 1 when the
 * grace period (server.shutdown_grace_seconds) ran out or stopping failed. A second signal stops at once.
 */
export async function serveCommand(boot: BootConfig, write: (text: string) => void): Promise<number> {
  const platform = await createPlatform({ boot, print: write });
  const log = platform.app.log;
  let url: string;
  try {
    url = await platform.listen();
  } catch (err) {
    await platform.close();
    throw err;
  }
  log.info({ url }, `listening on ${url}`);
  // Scripts and supervisors wait for this exact line (decisions §8).
  write(`listening on ${url}\n`);
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn({ signal }, 'second signal: exiting without waiting');
        resolve(1);
        return;
      }
      stopping = true;
      log.info({ signal }, 'shutting down');
      const grace = platform.context.cfg().server.shutdown_grace_seconds * 1000;
      const timer = setTimeout(() => {
        log.error('shutdown grace period passed; exiting');
        resolve(1);
      }, grace + 1000);
      timer.unref();
      platform.close().then(
        () => {
          clearTimeout(timer);
          write('stopped\n');
          resolve(0);
        },
        (err: unknown) => {
          log.error({ err }, 'error during shutdown');
          resolve(1);
        },
      );
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
