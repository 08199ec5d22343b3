/** "order.*, user.**" or one per line → ["order.*", "user.**"]; empty entries left out. */
export function splitList(text: string): string[] {
  return text
    .split(/[,\s]+/)
    .map((p) => p.trim())
    .filter(Boolean);
}

/** A `datetime-local` value (local time, no zone) as ISO 8601, or undefined when empty. */
export function localToIso(value: string): string | undefined {
  if (!value) return undefined;
  const t = new Date(value);
  return Number.isNaN(t.getTime()) ? undefined : t.toISOString();
}
