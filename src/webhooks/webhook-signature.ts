import { createHmac } from 'node:crypto';

/**
 * The two signatures on every webhook request (docs/webhooks.md):
 * - `X-Platform-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`, verifiable as GitHub's
 *   `X-Hub-Signature-256` is;
 * - the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and
 *   `webhook-signature: v1,<base64 HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")>`, which bind the
 *   signature to a time, so a captured request cannot be replayed later.
 * `timestamp` is Unix seconds, taken anew for every attempt.
 */
export function signatureHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
): Record<string, string> {
  const hex = createHmac('sha256', secret).update(body, 'utf8').digest('hex');
  const standard = createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${id}.${timestamp}.${body}`, 'utf8')
    .digest('base64');
  return {
    'x-platform-timestamp': String(timestamp),
    'x-platform-signature-256': `sha256=${hex}`,
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${standard}`,
  };
}
