import { useState } from 'preact/hooks';
import { put } from '../../api/client.ts';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { type JsonSchema, SchemaForm } from '../../components/schema-form.tsx';
import { useAction } from '../../hooks/use-action.ts';

/**
 * The plugin's configuration as a form generated from its manifest's `config_schema`. Secrets arrive masked;
 * an untouched secret is sent back as the mask, which the platform reads as "unchanged".
 */
export function PluginConfigEditor({
  pluginId,
  schema,
  configuration,
  onSaved,
}: {
  pluginId: string;
  schema: JsonSchema | undefined;
  configuration: Record<string, unknown>;
  onSaved: () => void;
}) {
  const [value, setValue] = useState(configuration);
  const [raw, setRaw] = useState(JSON.stringify(configuration, null, 2));
  const [saved, setSaved] = useState(false);
  const save = useAction(async () => {
    const config = schema?.properties ? value : (JSON.parse(raw) as Record<string, unknown>);
    await put(`/plugins/${encodeURIComponent(pluginId)}`, { config });
    setSaved(true);
    onSaved();
  });
  const errors: Record<string, string> = {};
  for (const [k, v] of Object.entries(save.error?.fieldErrors ?? {})) errors[k.replace(/^config\./, '')] = v;
  return (
    <form
      class="form-grid"
      aria-label="Plugin configuration"
      onSubmit={(e) => {
        e.preventDefault();
        setSaved(false);
        void save.run();
      }}
    >
      {schema?.properties ? (
        <SchemaForm schema={schema} value={value} onChange={setValue} errors={errors} />
      ) : (
        <label>
          Configuration (JSON; the plugin declares no schema)
          <textarea rows={8} value={raw} onInput={(e) => setRaw(e.currentTarget.value)} />
        </label>
      )}
      {saved ? (
        <p class="notice notice-good" role="status">
          Configuration saved.
        </p>
      ) : null}
      <ErrorNotice error={save.error} title="Could not save the configuration" />
      <div class="actions">
        <button type="submit" class="primary" disabled={save.busy}>
          Save configuration
        </button>
      </div>
    </form>
  );
}
