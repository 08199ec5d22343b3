/**
 * Emits `event_type` with `data` on each job's cron expression. The platform's scheduler runs each
 * occurrence on exactly one instance, so a cluster emits every occurrence once.
 *
 * @type {import('platform/sdk').PluginDefinition<{
 *   jobs: { name?: string; cron: string; event_type: string; data: Record<string, unknown>; priority?: number }[]
 * }>}
 */
export default {
  setup(ctx) {
    const runs = new Map();
    ctx.config.jobs.forEach((job, index) => {
      const name = job.name ?? `job-${index + 1}`;
      runs.set(name, { cron: job.cron, event_type: job.event_type, emitted: 0, last_event_id: null });
      ctx.tasks.schedule(name, job.cron, async ({ occurrence }) => {
        const event = await ctx.events.emit(
          job.event_type,
          { ...job.data, scheduled_for: occurrence, job: name },
          job.priority === undefined ? {} : { priority: job.priority },
        );
        const run = runs.get(name);
        run.emitted += 1;
        run.last_event_id = event.event_id;
      });
    });
    ctx.routes.get('/jobs', () => ({ jobs: [...runs].map(([name, run]) => ({ name, ...run })) }));
    ctx.logger.info(`scheduled ${runs.size} job(s)`);
  },
};
