import type { ComponentChildren } from 'preact';

/** A label and its value; false or null leaves the entry out (for figures only some answers carry). */
export type KeyValue = readonly [string, ComponentChildren] | false | null | undefined;

/**
 * Labelled figures as a description list: `stats` as tiles, `kv` as label / value lines, `kv wide` as such
 * lines in columns.
 */
export function KeyValues({
  items,
  variant = 'kv',
}: {
  items: readonly KeyValue[];
  variant?: 'kv' | 'kv wide' | 'stats';
}) {
  return (
    <dl class={variant}>
      {items.map((item) =>
        item ? (
          <div key={item[0]}>
            <dt>{item[0]}</dt>
            <dd>{item[1]}</dd>
          </div>
        ) : null,
      )}
    </dl>
  );
}
