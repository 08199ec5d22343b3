/** A sortable column header: a button inside the th, with aria-sort telling the current order. */
export function SortHeader({
  label,
  field,
  sort,
  order,
  onSort,
}: {
  label: string;
  field: string;
  sort: string;
  order: 'asc' | 'desc';
  onSort: (field: string, order: 'asc' | 'desc') => void;
}) {
  const active = sort === field;
  return (
    <th scope="col" aria-sort={active ? (order === 'asc' ? 'ascending' : 'descending') : 'none'}>
      <button
        type="button"
        class="sort"
        onClick={() => onSort(field, active && order === 'asc' ? 'desc' : 'asc')}
      >
        {label}
        <span aria-hidden="true">{active ? (order === 'asc' ? ' ▲' : ' ▼') : ' ↕'}</span>
      </button>
    </th>
  );
}
