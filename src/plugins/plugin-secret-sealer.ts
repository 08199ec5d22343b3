import type { EventCipher } from '../events/event-cipher.js';
import { mapSecrets } from './plugin-config.js';

// Marks a sealed secret inside the stored configuration, so a row written before secrets were sealed (the
// value still in clear) is told apart from one written since, and is sealed the next time it is written.
const SEALED = 'sealed:';

const schemaOf = (manifestText: string): unknown =>
  (JSON.parse(manifestText) as { config_schema?: unknown }).config_schema;

/**
 * Keeps the values a plugin's `config_schema` marks `"secret": true` encrypted in the `plugins` table, with
 * the cipher (and key) that seals webhook secrets and confidential event data. Only the secrets are sealed:
 * the rest of the configuration stays readable in the database. The plugin and the masking see clear values.
 */
export class PluginSecretSealer {
  constructor(private readonly cipher: Pick<EventCipher, 'seal' | 'open'>) {}

  /** The configuration as stored: each secret replaced by `sealed:<AES-256-GCM of its JSON>`. */
  seal(manifestText: string, configText: string): string {
    const config = JSON.parse(configText) as unknown;
    return JSON.stringify(
      mapSecrets(schemaOf(manifestText), config, (v) =>
        v === undefined ? v : `${SEALED}${this.cipher.seal(JSON.stringify(v))}`,
      ),
    );
  }

  /**
   * The configuration in clear. A secret still stored in clear is returned as it is; one sealed with another
   * key (`events.encryption_key` changed) cannot be read and is left out, so it reads as not set.
   */
  open(manifestText: string, storedText: string): string {
    const config = JSON.parse(storedText) as unknown;
    return JSON.stringify(
      mapSecrets(schemaOf(manifestText), config, (v) => (isSealed(v) ? this.opened(v) : v)),
    );
  }

  /** Whether a stored configuration still holds a secret in clear (written before secrets were sealed). */
  holdsClearSecret(manifestText: string, storedText: string): boolean {
    let clear = false;
    mapSecrets(schemaOf(manifestText), JSON.parse(storedText) as unknown, (v) => {
      if (v !== undefined && !isSealed(v)) clear = true;
      return v;
    });
    return clear;
  }

  private opened(sealed: string): unknown {
    try {
      return JSON.parse(this.cipher.open(sealed.slice(SEALED.length))) as unknown;
    } catch {
      return undefined;
    }
  }
}

const isSealed = (v: unknown): v is string => typeof v === 'string' && v.startsWith(SEALED);
