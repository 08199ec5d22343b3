import { useState } from 'preact/hooks';
import { put } from '../../api/client.ts';
import { ActionForm } from '../../components/action-form.tsx';
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
  onSaving,
  onSaved,
}: {
  pluginId: string;
  schema: JsonSchema | undefined;
  configuration: Record<string, unknown>;
  onSaving: () => void;
  /** The parent reloads the plugin, which remounts this form; so it, not the form, says "saved". */
  onSaved: () => void;
}) {
  const [value, setValue] = useState(configuration);
  const [raw, setRaw] = useState(JSON.stringify(configuration, null, 2));
  const save = useAction(async () => {
    const config = schema?.properties ? value : (JSON.parse(raw) as Record<string, unknown>);
    await put(`/plugins/${encodeURIComponent(pluginId)}`, { config });
    onSaved();
  });
  const errors: Record<string, string> = {};
  for (const [k, v] of Object.entries(save.error?.fieldErrors ?? {})) errors[k.replace(/^config\./, '')] = v;
  return (
    <ActionForm
      label="Plugin configuration"
      action={save}
      submit="Save configuration"
      submitClass="primary"
      errorTitle="Could not save the configuration"
      beforeRun={onSaving}
    >
      {schema?.properties ? (
        <SchemaForm schema={schema} value={value} onChange={setValue} errors={errors} />
      ) : (
        <label>
          Configuration (JSON; the plugin declares no schema)
          <textarea rows={8} value={raw} onInput={(e) => setRaw(e.currentTarget.value)} />
        </label>
      )}
    </ActionForm>
  );
}
