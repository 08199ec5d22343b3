import { SECRET_MASK } from '../config/config-masking.js';

const SECRET_NAME = /(secret|password|passwd|token|api_?key|private|credential|encryption_key)/i;
const URL_CREDENTIALS = /^([a-z][a-z0-9+.-]*:\/\/)([^/@\s]+)@/i;

/**
 * A copy of a service's settings safe to show: values under secret-sounding keys become the mask, and
 * credentials inside URLs (`postgres://user:pass@host`) are masked. Services mask their own secrets already;
 * this is the second line, so a slip in one service cannot leak a secret through the services API.
 */
export function maskedSettings(value: unknown, key = ''): unknown {
  if (typeof value === 'string') {
    if (value !== '' && SECRET_NAME.test(key)) return SECRET_MASK;
    return value.replace(URL_CREDENTIALS, (_m, scheme: string) => `${scheme}${SECRET_MASK}@`);
  }
  if (Array.isArray(value)) return value.map((v) => maskedSettings(v, key));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = maskedSettings(v, k);
    return out;
  }
  return value;
}
