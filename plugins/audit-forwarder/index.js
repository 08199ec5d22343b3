/**
 * Appends every event matching `config.patterns` to `config.path`, one JSON object per line. Deliveries are
 * at least once: a line carries the delivery id, so a consumer can drop a repeated one.
 *
 * The file is written through `ctx.files`, so it stays inside the plugin's own data folder
 * (`<storage.data_dir>/plugin-data/audit-forwarder`): the platform refuses a path that leaves it.
 *
 * @type {import('platform/sdk').PluginDefinition<{ path: string; patterns: string[] }>}
 */
export default {
  async setup(ctx) {
    const { path, patterns } = ctx.config;
    // Made now, so a refused path fails the setup rather than every delivery.
    await ctx.files.append(path, '');
    let forwarded = 0;
    await ctx.events.subscribe(
      patterns,
      async (event, delivery) => {
        const line = { ...event, delivery_id: delivery.delivery_id, forwarded_at: new Date().toISOString() };
        await ctx.files.append(path, `${JSON.stringify(line)}\n`);
        forwarded += 1;
      },
      { name: 'forward' },
    );
    // The path as configured, relative to the data folder: the server's own paths are shown to no one.
    ctx.routes.get('/status', () => ({ path, patterns, forwarded }));
    ctx.logger.info(`forwarding ${patterns.join(', ')} to ${path} in the plugin's data folder`);
  },
};
