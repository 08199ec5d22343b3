import { useState } from 'preact/hooks';
import { post } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { Badge } from '../../components/badge.tsx';
import { DataTable } from '../../components/data-table.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Link } from '../../components/link.tsx';
import { Page } from '../../components/page.tsx';
import { RequiresOperation } from '../../components/requires-operation.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { REFRESH } from '../../refresh-intervals.ts';
import { InstallPluginForm } from './install-plugin-form.tsx';
import { firstArray, type PluginItem } from './plugin-types.ts';

/** GET /api/v1/admin/plugins with enable / disable in place, and the install form. */
export function PluginsPage() {
  const list = useApi<unknown>('/admin/plugins', { refreshMs: REFRESH.lists });
  const [notice, setNotice] = useState<string | null>(null);
  const toggle = useAction(async (p: PluginItem) => {
    const action = p.enabled ? 'disable' : 'enable';
    await post(`/admin/plugins/${encodeURIComponent(p.id)}/${action}`);
    setNotice(`${p.name} ${action}d.`);
    list.reload();
  });
  return (
    <Page title="Plugins">
      <SuccessNotice>{notice}</SuccessNotice>
      <ErrorNotice error={toggle.error} title="Could not change the plugin" />
      <ApiView state={list} what="Plugins" endpoint="GET /api/v1/admin/plugins">
        {(d) => {
          const plugins = firstArray<PluginItem>(d);
          return (
            <DataTable
              caption="Installed plugins"
              columns={['Plugin', 'Version', 'Status', 'Health', 'Enabled']}
              rows={plugins}
              empty="No plugins are installed."
              row={(p) => (
                <tr key={p.id} data-plugin={p.id}>
                  <td>
                    <Link to={`/plugins/${encodeURIComponent(p.id)}`}>{p.name}</Link>
                    {p.description ? <div class="muted small">{p.description}</div> : null}
                  </td>
                  <td>{p.version}</td>
                  <td>
                    <Badge value={p.status} />
                  </td>
                  <td>
                    <Badge value={p.health} />
                  </td>
                  <td>
                    <button
                      type="button"
                      aria-pressed={p.enabled}
                      disabled={toggle.busy}
                      onClick={() => void toggle.run(p)}
                      aria-label={`${p.enabled ? 'Disable' : 'Enable'} ${p.name}`}
                    >
                      {p.enabled ? 'Disable' : 'Enable'}
                    </button>
                  </td>
                </tr>
              )}
            />
          );
        }}
      </ApiView>
      <details class="panel" open>
        <summary>Install a plugin</summary>
        <RequiresOperation operation="POST /api/v1/admin/plugins/install" what="Installing plugins">
          <InstallPluginForm
            onInstalled={(name) => {
              setNotice(`${name} installed.`);
              list.reload();
            }}
          />
        </RequiresOperation>
      </details>
    </Page>
  );
}
