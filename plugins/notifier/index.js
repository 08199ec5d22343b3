import { createHmac } from 'node:crypto';

/**
 * Posts each event matching `config.patterns` to `config.url` as `{text, event}`. With a secret the body is
 * signed like the platform's webhooks: `X-Platform-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`.
 * A post that does not get a 2xx throws, so the delivery is retried by the subscription's retry policy.
 * Posts go through `ctx.http.fetch`, the platform's guarded connector: private targets are refused unless
 * `webhooks.allow_private_targets` is on, and redirects are not followed.
 *
 * @type {import('platform/sdk').PluginDefinition<{ url: string; secret: string; patterns: string[]; timeout_ms: number }>}
 */
export default {
  async setup(ctx) {
    const { url, secret, patterns, timeout_ms: timeoutMs } = ctx.config;
    await ctx.events.subscribe(
      patterns,
      async (event, delivery) => {
        const body = JSON.stringify({ text: `${event.event_type} from ${event.source}`, event });
        const headers = {
          'content-type': 'application/json',
          'x-platform-delivery-id': delivery.delivery_id,
        };
        if (secret)
          headers['x-platform-signature-256'] =
            `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
        const res = await ctx.http.fetch(url, { method: 'POST', headers, body, timeout_ms: timeoutMs });
        if (!res.ok) throw new Error(`the chat webhook at ${new URL(url).host} answered ${res.status}`);
      },
      { name: 'notify' },
    );
    ctx.logger.info(`notifying ${new URL(url).host} of ${patterns.join(', ')}`);
  },
};
