import { useState } from 'preact/hooks';
import { api, post } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
import { ApiView } from '../../components/api-view.tsx';
import { Field } from '../../components/field.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { type AvailablePlugin, firstArray } from './plugin-types.ts';

/**
 * Install from a configured repository (POST /api/v1/admin/plugins/install, source `repository`) or from an
 * uploaded `.tgz` (the same path as multipart, source `file`).
 */
export function InstallPluginForm({ onInstalled }: { onInstalled: (name: string) => void }) {
  const available = useApi<unknown>('/admin/plugins/available');
  const [source, setSource] = useState<'repository' | 'file'>('repository');
  const [name, setName] = useState('');
  const [version, setVersion] = useState('latest');
  const [enable, setEnable] = useState(true);
  const [file, setFile] = useState<File | null>(null);
  const install = useAction(async () => {
    let res: { plugin?: { name?: string } } | undefined;
    if (source === 'repository') {
      res = await post('/admin/plugins/install', {
        source: 'repository',
        plugin_name: name,
        version,
        config: { enabled: enable },
      });
    } else {
      if (!file) throw new Error('Choose a .tgz package first');
      const form = new FormData();
      form.append('source', 'file');
      form.append('enabled', String(enable));
      form.append('file', file);
      res = await api('POST', '/admin/plugins/install', { body: form });
    }
    // The package's own name, not the file's: an upload called plugin.tgz may hold any plugin.
    onInstalled(res?.plugin?.name ?? (source === 'repository' ? name : (file?.name ?? '')));
  });
  const errors = install.error?.fieldErrors ?? {};
  const offered = firstArray<AvailablePlugin>(available.data);
  const chosen = offered.find((p) => p.name === name);
  return (
    <ActionForm
      label="Install plugin"
      action={install}
      submit={install.busy ? 'Installing…' : 'Install'}
      submitClass="primary"
      errorTitle="Could not install"
    >
      <fieldset>
        <legend>Source</legend>
        <label class="check-label">
          <input
            type="radio"
            name="source"
            checked={source === 'repository'}
            onChange={() => setSource('repository')}
          />{' '}
          Repository
        </label>
        <label class="check-label">
          <input type="radio" name="source" checked={source === 'file'} onChange={() => setSource('file')} />{' '}
          Package file (.tgz)
        </label>
      </fieldset>
      {source === 'repository' ? (
        <>
          <ApiView state={available} what="Repository plugins" endpoint="GET /api/v1/admin/plugins/available">
            {() => null}
          </ApiView>
          <Field label="Plugin" error={errors['plugin_name']}>
            {(p) =>
              offered.length > 0 ? (
                <select {...p} required value={name} onChange={(e) => setName(e.currentTarget.value)}>
                  <option value="">Choose…</option>
                  {offered.map((o) => (
                    <option key={o.name} value={o.name}>
                      {o.name}
                      {o.installed_version ? ` (installed ${o.installed_version})` : ''}
                      {o.description ? ` — ${o.description}` : ''}
                    </option>
                  ))}
                </select>
              ) : (
                <input {...p} required value={name} onInput={(e) => setName(e.currentTarget.value)} />
              )
            }
          </Field>
          <Field label="Version" error={errors['version']}>
            {(p) =>
              chosen?.versions?.length ? (
                <select {...p} value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
                  <option value="latest">latest</option>
                  {chosen.versions.map((v) => (
                    <option key={v}>{v}</option>
                  ))}
                </select>
              ) : (
                <input {...p} value={version} onInput={(e) => setVersion(e.currentTarget.value)} />
              )
            }
          </Field>
        </>
      ) : (
        <Field label="Package file" error={errors['file']}>
          {(p) => (
            <input
              {...p}
              type="file"
              accept=".tgz,.tar.gz,application/gzip"
              required
              onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)}
            />
          )}
        </Field>
      )}
      <label class="check-label">
        <input type="checkbox" checked={enable} onChange={(e) => setEnable(e.currentTarget.checked)} /> Enable
        after installing
      </label>
    </ActionForm>
  );
}
