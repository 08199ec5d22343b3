import { appendFile, mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/**
 * Appends every event matching `config.patterns` to `config.path`, one JSON object per line. Deliveries are
 * at least once: a line carries the delivery id, so a consumer can drop a repeated one.
 *
 * @type {import('platform/sdk').PluginDefinition<{ path: string; patterns: string[] }>}
 */
export default {
  async setup(ctx) {
    // A relative path lands in the plugin's own data folder, not wherever the platform was started.
    const file = resolve(ctx.plugin.dataDir, ctx.config.path);
    await mkdir(dirname(file), { recursive: true });
    let forwarded = 0;
    await ctx.events.subscribe(
      ctx.config.patterns,
      async (event, delivery) => {
        const line = { ...event, delivery_id: delivery.delivery_id, forwarded_at: new Date().toISOString() };
        await appendFile(file, `${JSON.stringify(line)}\n`);
        forwarded += 1;
      },
      { name: 'forward' },
    );
    ctx.routes.get('/status', () => ({ path: file, patterns: ctx.config.patterns, forwarded }));
    ctx.logger.info(`forwarding ${ctx.config.patterns.join(', ')} to ${file}`);
  },
};
