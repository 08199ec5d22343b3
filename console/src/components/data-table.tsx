import type { ComponentChildren, JSX } from 'preact';
import { Pager, type Pagination } from './pager.tsx';

/** A column header: plain text, a ready `<th>` (a SortHeader), or a header read out but not shown. */
export type Column = string | { hidden: string } | JSX.Element;

/** The header of the column that holds each row's buttons: named for screen readers, blank on screen. */
export const ACTIONS: Column = { hidden: 'Actions' };

function Header({ column }: { column: Column }) {
  if (typeof column === 'string') return <th scope="col">{column}</th>;
  if ('hidden' in column) {
    return (
      <th scope="col">
        <span class="sr-only">{column.hidden}</span>
      </th>
    );
  }
  return column;
}

/**
 * The console's list table: a frame that scrolls sideways on narrow screens (so the page never does), the
 * headers, one row per item, a full-width row saying so when there are none, and the pager when the list
 * has pages. `row` renders one `<tr>` with its own key. The frame is a named region in the Tab order, so a
 * keyboard user can focus it and scroll it with the arrow keys to reach the last column; the caption names
 * the table (visually hidden), and the pager is named after it ("Users pages").
 */
export function DataTable<T>({
  columns,
  rows,
  row,
  empty,
  caption,
  pagination,
  onPage,
  wrapClass,
  bodyTestId,
}: {
  columns: readonly Column[];
  rows: readonly T[];
  row: (item: T, index: number) => JSX.Element;
  empty: ComponentChildren;
  caption?: string;
  pagination?: Pagination | undefined;
  onPage?: (page: number) => void;
  wrapClass?: string;
  bodyTestId?: string;
}) {
  return (
    <>
      <section
        class={wrapClass ? `table-wrap ${wrapClass}` : 'table-wrap'}
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling frame must take focus to be scrolled by keyboard
        tabIndex={0}
        // Not the caption alone: a section of the page often bears the same name ("Users", "Blocked addresses").
        aria-label={caption ? `${caption} table` : 'Table'}
      >
        <table>
          {caption ? <caption class="sr-only">{caption}</caption> : null}
          <thead>
            <tr>
              {columns.map((c, i) => (
                <Header key={i} column={c} />
              ))}
            </tr>
          </thead>
          <tbody data-testid={bodyTestId}>
            {rows.length === 0 ? (
              <tr>
                <td colSpan={columns.length} class="muted">
                  {empty}
                </td>
              </tr>
            ) : (
              rows.map(row)
            )}
          </tbody>
        </table>
      </section>
      {pagination && onPage ? (
        <Pager pagination={pagination} onPage={onPage} label={caption ? `${caption} pages` : 'Pages'} />
      ) : null}
    </>
  );
}
