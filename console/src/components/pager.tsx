export interface Pagination {
  page: number;
  per_page: number;
  total: number;
  pages?: number;
  has_next: boolean;
  has_prev?: boolean;
}

/** Previous / next with where we are; the buttons are real buttons, disabled at the ends. */
export function Pager({
  pagination,
  onPage,
  label = 'Pages',
}: {
  pagination: Pagination;
  onPage: (page: number) => void;
  /** The navigation landmark's name: distinct per list, when a page has more than one pager. */
  label?: string;
}) {
  const { page, per_page: perPage, total } = pagination;
  const pages = pagination.pages ?? Math.max(1, Math.ceil(total / perPage));
  const from = total === 0 ? 0 : (page - 1) * perPage + 1;
  const to = Math.min(total, page * perPage);
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ← Previous
      </button>
      <span aria-live="polite">
        {from}–{to} of {total} (page {page} of {Math.max(1, pages)})
      </span>
      <button type="button" disabled={!pagination.has_next} onClick={() => onPage(page + 1)}>
        Next →
      </button>
    </nav>
  );
}
