import { useLayoutEffect, useRef } from 'preact/hooks';
import type { ArrayFieldProps } from './list-input.tsx';

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/**
 * A value edited as JSON text: a list of objects, say, which has no form of its own. What is typed is kept as
 * typed and handed on once it parses as a JSON array; until then the textarea is invalid (the form is not
 * submitted, the browser says why), so the last valid value is never sent in its place. The text is taken
 * anew only when the value changed elsewhere.
 */
export function JsonArrayInput({ value, onChange, rows, ...props }: ArrayFieldProps) {
  const current = JSON.stringify(value);
  const seen = useRef({ text: pretty(value), json: current });
  const box = useRef<HTMLTextAreaElement>(null);
  const replaced = seen.current.json !== current;
  if (replaced) seen.current = { text: pretty(value), json: current };
  // Text taken from a new value is valid JSON again.
  useLayoutEffect(() => {
    if (replaced) box.current?.setCustomValidity('');
  });
  return (
    <textarea
      {...props}
      ref={box}
      class="mono"
      spellcheck={false}
      rows={rows ?? Math.min(12, Math.max(3, seen.current.text.split('\n').length + 1))}
      value={seen.current.text}
      onInput={(e) => {
        const text = e.currentTarget.value;
        let problem = '';
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
          if (!Array.isArray(parsed)) problem = 'Must be a JSON array: [ … ]';
        } catch (err) {
          problem = `Not valid JSON: ${(err as Error).message}`;
        }
        e.currentTarget.setCustomValidity(problem);
        if (problem) {
          seen.current = { ...seen.current, text };
          return;
        }
        seen.current = { text, json: JSON.stringify(parsed) };
        onChange(parsed as unknown[]);
      }}
    />
  );
}
