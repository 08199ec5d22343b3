import { useState } from 'preact/hooks';

const toList = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/** The props of a list setting edited in a textarea (ListInput, JsonArrayInput). */
export interface ArrayFieldProps {
  id: string;
  name?: string;
  rows?: number;
  'aria-invalid': boolean;
  'aria-describedby'?: string;
  value: unknown[];
  onChange: (next: unknown[]) => void;
}

/**
 * A list setting, one entry per line. The textarea keeps what is typed (an Enter that starts the next entry,
 * a blank line, `1.` on the way to `1.5`) and hands the entries on, each made by `item` from its line (text by
 * default; a number for a list of numbers); it takes the value anew only when that changed elsewhere (discard).
 */
export function ListInput({
  value,
  onChange,
  item,
  rows,
  ...props
}: ArrayFieldProps & {
  /** The entry a line stands for (default: the line's text). */
  item?: (line: string) => unknown;
}) {
  const [text, setText] = useState(value.join('\n'));
  const entries = (t: string) => (item ? toList(t).map(item) : toList(t));
  const typed = JSON.stringify(entries(text)) === JSON.stringify(item ? value : value.map(String));
  const shown = typed ? text : value.join('\n');
  return (
    <textarea
      {...props}
      rows={rows ?? Math.max(2, shown.split('\n').length + 1)}
      value={shown}
      onInput={(e) => {
        setText(e.currentTarget.value);
        onChange(entries(e.currentTarget.value));
      }}
    />
  );
}
