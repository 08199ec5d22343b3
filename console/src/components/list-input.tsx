import { useState } from 'preact/hooks';

const toList = (text: string) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');

/**
 * A list setting, one entry per line. The textarea keeps what is typed (an Enter that starts the next entry,
 * a blank line) and hands the entries on; it takes the value anew only when that changed elsewhere (discard).
 */
export function ListInput({
  value,
  onChange,
  rows,
  ...props
}: {
  id: string;
  name?: string;
  rows?: number;
  'aria-invalid': boolean;
  'aria-describedby'?: string;
  value: unknown[];
  onChange: (next: string[]) => void;
}) {
  const [text, setText] = useState(value.join('\n'));
  const shown = JSON.stringify(toList(text)) === JSON.stringify(value.map(String)) ? text : value.join('\n');
  return (
    <textarea
      {...props}
      rows={rows ?? Math.max(2, shown.split('\n').length + 1)}
      value={shown}
      onInput={(e) => {
        setText(e.currentTarget.value);
        onChange(toList(e.currentTarget.value));
      }}
    />
  );
}
