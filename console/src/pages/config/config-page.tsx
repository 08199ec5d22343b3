import { useEffect, useRef, useState } from 'preact/hooks';
import { post, put } from '../../api/client.ts';
import { ApiView } from '../../components/api-view.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { Page } from '../../components/page.tsx';
import { SuccessNotice } from '../../components/success-notice.tsx';
import { formatTime } from '../../format.ts';
import { useAction } from '../../hooks/use-action.ts';
import { useApi } from '../../hooks/use-api.ts';
import { useFocusInvalid } from '../../hooks/use-focus-invalid.ts';
import { diffTree, type Tree } from './config-diff.ts';
import { ConfigFields } from './config-fields.tsx';
import { useKeyInfo } from './config-key-info.ts';

interface AdminConfig {
  config: Record<string, Tree>;
  metadata: { last_updated: string | null; updated_by: string | null; config_version: string };
}

/** What a save changed, and whether a restart is needed for it. */
function savedMessage(r: { updated_keys: string[]; restart_required: boolean }): string {
  const what = r.updated_keys.length === 0 ? 'Nothing changed.' : `Saved ${r.updated_keys.join(', ')}.`;
  return r.restart_required ? `${what} A restart is needed for some of these to take effect.` : what;
}

/** The configuration by section, secrets masked; saving sends only changed keys, and problems show by field. */
export function ConfigPage() {
  const state = useApi<AdminConfig>('/admin/config');
  const info = useKeyInfo();
  const [section, setSection] = useState<string>('');
  const [edited, setEdited] = useState<Tree | null>(null);
  const [result, setResult] = useState<{ updated_keys: string[]; restart_required: boolean } | null>(null);
  const sections = Object.keys(state.data?.config ?? {});
  const current = section || sections[0] || '';
  const original = state.data?.config[current];

  useEffect(() => {
    setEdited(original ? structuredClone(original) : null);
  }, [current, state.data]);

  const save = useAction(async () => {
    if (!original || !edited) return;
    const changes = diffTree(original, edited);
    if (!changes) {
      setResult({ updated_keys: [], restart_required: false });
      return;
    }
    const res = await put<{ updated_keys: string[]; restart_required: boolean }>('/config', {
      [current]: changes,
    });
    setResult(res);
    state.reload();
  });
  const reload = useAction(async () => {
    await post('/admin/config/reload');
    state.reload();
  });
  const errors = save.error?.fieldErrors ?? {};
  const form = useRef<HTMLFormElement>(null);
  useFocusInvalid(form, save.error);
  return (
    <Page
      title="Configuration"
      actions={
        <button type="button" disabled={reload.busy} onClick={() => void reload.run()}>
          Reload from files
        </button>
      }
    >
      <ErrorNotice error={reload.error} title="Could not reload" />
      <ApiView state={state} what="Configuration" endpoint="GET /api/v1/admin/config">
        {(d) => (
          <>
            <p class="muted">
              Version {d.metadata.config_version}, last changed {formatTime(d.metadata.last_updated)}
              {d.metadata.updated_by ? ` by ${d.metadata.updated_by}` : ''}.
            </p>
            <div class="config-layout">
              <nav aria-label="Configuration sections" class="section-list">
                <ul>
                  {sections.map((s) => (
                    <li key={s}>
                      <button
                        type="button"
                        aria-current={s === current ? 'true' : undefined}
                        onClick={() => {
                          setSection(s);
                          setResult(null);
                          save.clear();
                        }}
                      >
                        {s}
                      </button>
                    </li>
                  ))}
                </ul>
              </nav>
              {edited ? (
                <form
                  ref={form}
                  class="form-grid"
                  aria-label={`Section ${current}`}
                  onSubmit={(e) => {
                    e.preventDefault();
                    if (save.busy) return;
                    setResult(null);
                    void save.run();
                  }}
                >
                  <h2>{current}</h2>
                  <ConfigFields
                    value={edited}
                    shape={original}
                    onChange={setEdited}
                    errors={errors}
                    path={current}
                    info={info}
                  />
                  <SuccessNotice>{result ? savedMessage(result) : null}</SuccessNotice>
                  <ErrorNotice error={save.error} title="Not saved" />
                  <div class="actions">
                    <button type="submit" class="primary" aria-disabled={save.busy ? 'true' : undefined}>
                      Save {current}
                    </button>
                    <button
                      type="button"
                      onClick={() => setEdited(original ? structuredClone(original) : null)}
                    >
                      Discard changes
                    </button>
                  </div>
                </form>
              ) : null}
            </div>
          </>
        )}
      </ApiView>
    </Page>
  );
}
