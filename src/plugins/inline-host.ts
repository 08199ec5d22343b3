import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createPluginContext } from './plugin-context.js';
import { type PlatformSide, type PluginHost, withTimeout } from './plugin-host.js';
import { type ContextPort, PluginCallError, type RealmInfo, toWireError } from './plugin-wire.js';
import type { PluginDefinition } from './sdk.js';

/**
 * Runs a plugin in the platform's own thread: fastest, but it shares the platform's memory and event loop, so a
 * plugin that blocks the loop cannot be stopped (use `isolation: worker` for code you do not trust that far).
 */
export class InlineHost implements PluginHost {
  readonly isolation = 'inline';
  private definition: PluginDefinition | undefined;

  constructor(
    private readonly options: {
      dir: string;
      main: string;
      /** Part of the module URL, so a changed package is imported anew rather than from the module cache. */
      sha256: string;
      info: RealmInfo;
      side: PlatformSide;
      timeoutMs: () => number;
    },
  ) {}

  async start(): Promise<void> {
    const { dir, main, sha256, info, side } = this.options;
    const url = `${pathToFileURL(join(dir, main)).href}?sha256=${sha256}`;
    const mod =
      (await withTimeout(
        import(url) as Promise<{ default?: unknown }>,
        this.options.timeoutMs(),
        'loading the plugin module',
      )) ?? {};
    const definition = mod.default as PluginDefinition | undefined;
    if (!definition || typeof definition.setup !== 'function') {
      throw new Error(`the main module (${main}) has no default export with a setup(ctx) function`);
    }
    this.definition = definition;
    const pending: Promise<void>[] = [];
    const port: ContextPort = {
      call: (op, args) => side.call(op, args),
      register: (registration, handler) => {
        const done = side.register(registration, async (payload) => {
          try {
            return await handler(payload);
          } catch (err) {
            throw new PluginCallError(toWireError(err));
          }
        });
        done.catch(() => {});
        pending.push(done);
        return done;
      },
      log: (level, message, fields) => side.log(level, message, fields),
      health: (status, details) => side.health(status, details),
      denied: (permission, what) => side.denied(permission, what),
    };
    const ctx = createPluginContext(info, port);
    await withTimeout(
      Promise.resolve().then(() => definition.setup(ctx)),
      this.options.timeoutMs(),
      'setup',
    );
    await Promise.all(pending);
  }

  async stop(): Promise<void> {
    const definition = this.definition;
    this.definition = undefined;
    if (typeof definition?.teardown !== 'function') return;
    await withTimeout(
      Promise.resolve().then(() => definition.teardown?.()),
      this.options.timeoutMs(),
      'teardown',
    );
  }

  async memoryMb(): Promise<number | null> {
    return null;
  }
}
