import { useState } from 'preact/hooks';
import { del, post } from '../../api/client.ts';
import { sessionState } from '../../api/session.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Field } from '../../components/field.tsx';
import { OnceSecret } from '../../components/once-secret.tsx';
import { formatNumber, formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';

interface ApiKey {
  id: string;
  name: string;
  key_preview: string;
  scopes: string[];
  created_at: string;
  expires_at: string | null;
  last_used: string | null;
  usage_count: number;
  is_active: boolean;
}

const SCOPES = [
  'read:system',
  'read:metrics',
  'read:plugins',
  'write:plugins',
  'read:users',
  'write:users',
  'events:emit',
  'events:subscribe',
  'write:cache',
  'admin:system',
  'admin:config',
  'admin:services',
  'admin:backup',
  'admin:security',
  'admin:users',
  'admin:plugins',
];

/** The caller's API keys (GET/POST/DELETE /api/v1/auth/api-keys); a new key's full value is shown once. */
export function ApiKeysSection() {
  const keys = useApi<{ api_keys: ApiKey[] }>('/auth/api-keys');
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const [expires, setExpires] = useState('');
  const [newKey, setNewKey] = useState<{ name: string; key: string } | null>(null);
  const held = sessionState().user?.permissions ?? [];
  const offered = held.includes('*') ? SCOPES : SCOPES.filter((s) => held.includes(s));
  const create = useAction(async () => {
    const res = await post<{ api_key: ApiKey; key: string }>('/auth/api-keys', {
      name,
      ...(scopes.length ? { scopes } : {}),
      ...(expires ? { expires_at: new Date(expires).toISOString() } : {}),
    });
    setNewKey({ name: res.api_key.name, key: res.key });
    setName('');
    setScopes([]);
    setExpires('');
    keys.reload();
  });
  const revoke = useAction(async (id: string) => {
    await del(`/auth/api-keys/${encodeURIComponent(id)}`);
    keys.reload();
  });
  const errors = create.error?.fieldErrors ?? {};
  return (
    <section aria-labelledby="api-keys-title">
      <h2 id="api-keys-title">API keys</h2>
      {newKey ? (
        <OnceSecret label={`API key “${newKey.name}”`} value={newKey.key} onDismiss={() => setNewKey(null)} />
      ) : null}
      <ApiView state={keys} what="API keys" endpoint="GET /api/v1/auth/api-keys">
        {(d) =>
          d.api_keys.length === 0 ? (
            <p class="muted">You have no API keys.</p>
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Key</th>
                    <th scope="col">Scopes</th>
                    <th scope="col">Last used</th>
                    <th scope="col">Uses</th>
                    <th scope="col">Active</th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {d.api_keys.map((k) => (
                    <tr key={k.id}>
                      <td>{k.name}</td>
                      <td>
                        <code>{k.key_preview}</code>
                      </td>
                      <td class="small">{k.scopes.join(', ') || 'all of yours'}</td>
                      <td>{formatTime(k.last_used)}</td>
                      <td>{formatNumber(k.usage_count)}</td>
                      <td>
                        <Badge value={k.is_active} />
                      </td>
                      <td>
                        {k.is_active ? (
                          <ConfirmButton
                            label="Revoke"
                            title={`Revoke the key “${k.name}”?`}
                            confirmLabel="Revoke"
                            danger
                            onConfirm={() => void revoke.run(k.id)}
                          >
                            <p>Programs using it stop working at once.</p>
                          </ConfirmButton>
                        ) : null}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </ApiView>
      <ErrorNotice error={revoke.error} title="Could not revoke" />
      <form
        class="form-grid"
        aria-label="Create API key"
        onSubmit={(e) => {
          e.preventDefault();
          void create.run();
        }}
      >
        <h3>New API key</h3>
        <Field label="Name" error={errors['name']}>
          {(p) => (
            <input
              {...p}
              required
              maxLength={100}
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <Field label="Expires" error={errors['expires_at']} hint="Empty: never">
          {(p) => (
            <input
              {...p}
              type="datetime-local"
              value={expires}
              onInput={(e) => setExpires(e.currentTarget.value)}
            />
          )}
        </Field>
        <fieldset class="scopes">
          <legend>Scopes (none ticked: all of yours)</legend>
          {offered.map((s) => (
            <label key={s} class="check-label">
              <input
                type="checkbox"
                checked={scopes.includes(s)}
                onChange={(e) =>
                  setScopes(e.currentTarget.checked ? [...scopes, s] : scopes.filter((x) => x !== s))
                }
              />{' '}
              {s}
            </label>
          ))}
          {errors['scopes'] ? <span class="field-error">{errors['scopes']}</span> : null}
        </fieldset>
        <ErrorNotice error={create.error} title="Could not create the key" />
        <div class="actions">
          <button type="submit" class="primary" disabled={create.busy}>
            Create API key
          </button>
        </div>
      </form>
    </section>
  );
}
