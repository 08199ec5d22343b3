import { createHmac } from 'node:crypto';

/** The secret a rotation replaced, still signing until `expiresAt` (epoch milliseconds). */
export interface PreviousSecret {
  secret: string;
  expiresAt: number;
}

/**
 * The two signatures on every webhook request (docs/webhooks.md):
 * - `X-Platform-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`, verifiable as GitHub's
 *   `X-Hub-Signature-256` is;
 * - the Standard Webhooks headers `webhook-id`, `webhook-timestamp` and
 *   `webhook-signature: v1,<base64 HMAC-SHA256(secret bytes, "<id>.<timestamp>.<body>")>`, which bind the
 *   signature to a time, so a captured request cannot be replayed later.
 * `timestamp` is Unix seconds, taken anew for every attempt. During a rotation's overlap (`previous` not yet
 * expired) the request is signed with both secrets: `webhook-signature: v1,<new> v1,<old>` and
 * `X-Platform-Signature-256-Previous: sha256=<hex with the old secret>`.
 */
export function signatureHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
  previous?: PreviousSecret | null,
): Record<string, string> {
  const headers: Record<string, string> = {
    'x-platform-timestamp': String(timestamp),
    'x-platform-signature-256': `sha256=${hexSignature(secret, body)}`,
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${standardSignature(secret, id, timestamp, body)}`,
  };
  if (previous && previous.expiresAt > Date.now()) {
    headers['x-platform-signature-256-previous'] = `sha256=${hexSignature(previous.secret, body)}`;
    headers['webhook-signature'] += ` v1,${standardSignature(previous.secret, id, timestamp, body)}`;
  }
  return headers;
}

function hexSignature(secret: string, body: string): string {
  return createHmac('sha256', secret).update(body, 'utf8').digest('hex');
}

function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${id}.${timestamp}.${body}`, 'utf8')
    .digest('base64');
}
