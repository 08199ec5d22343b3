/** Structured data the console has no dedicated view for, shown as indented JSON. */
export function JsonView({ value, label }: { value: unknown; label?: string }) {
  return (
    <pre class="json" title={label}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}
