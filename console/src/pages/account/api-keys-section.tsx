import { useState } from 'preact/hooks';
import { del, post } from '../../api/client.ts';
import { sessionState } from '../../api/session.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { CheckboxGroup } from '../../components/checkbox-group.tsx';
import { ConfirmButton } from '../../components/confirm-button.tsx';
import { ACTIONS, DataTable } from '../../components/data-table.tsx';
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
        {(d) => (
          <DataTable
            caption="Your API keys"
            columns={['Name', 'Key', 'Scopes', 'Last used', 'Uses', 'Active', ACTIONS]}
            rows={d.api_keys}
            empty="You have no API keys."
            row={(k) => (
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
            )}
          />
        )}
      </ApiView>
      <ErrorNotice error={revoke.error} title="Could not revoke" />
      <ActionForm
        label="Create API key"
        action={create}
        submit="Create API key"
        submitClass="primary"
        errorTitle="Could not create the key"
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
        <CheckboxGroup
          class="scopes"
          legend="Scopes (none ticked: all of yours)"
          options={offered}
          value={scopes}
          onChange={setScopes}
          error={errors['scopes']}
        />
      </ActionForm>
    </section>
  );
}
