/** A table of records: sortable by any column (click or Enter on its header), filtered by a text box. */
import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';

export interface Column<T> {
  key: string;
  label: string;
  value: (row: T) => string | number;
  render?: (row: T) => ComponentChildren;
}

export function DataTable<T>(props: { caption: string; rows: T[]; columns: Column<T>[]; actions?: (row: T) => ComponentChildren; filter?: boolean }) {
  const [sort, setSort] = useState<{ key: string; dir: 1 | -1 } | null>(null);
  const [filter, setFilter] = useState('');
  const rows = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    let out = needle ? props.rows.filter((r) => props.columns.some((c) => String(c.value(r)).toLowerCase().includes(needle))) : props.rows;
    const column = sort && props.columns.find((c) => c.key === sort.key);
    if (column && sort) {
      out = [...out].sort((a, b) => {
        const x = column.value(a);
        const y = column.value(b);
        return (typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y), undefined, { numeric: true })) * sort.dir;
      });
    }
    return out;
  }, [props.rows, props.columns, sort, filter]);
  return (
    <div class="table-wrap">
      {props.filter !== false && (
        <label class="filter">
          Filter {props.caption.toLowerCase()}
          <input type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
        </label>
      )}
      <table>
        <caption>
          {props.caption} ({rows.length})
        </caption>
        <thead>
          <tr>
            {props.columns.map((c) => (
              <th key={c.key} scope="col" aria-sort={sort?.key === c.key ? (sort.dir === 1 ? 'ascending' : 'descending') : 'none'}>
                <button type="button" class="sort" onClick={() => setSort({ key: c.key, dir: sort?.key === c.key && sort.dir === 1 ? -1 : 1 })}>
                  {c.label}
                </button>
              </th>
            ))}
            {props.actions && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {rows.map((row, i) => (
            <tr key={i}>
              {props.columns.map((c) => (
                <td key={c.key} data-label={c.label}>
                  {c.render ? c.render(row) : c.value(row)}
                </td>
              ))}
              {props.actions && <td class="actions">{props.actions(row)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** Columns for records of strings (`{name: {a, b}}` replies): the key first, then every field seen. */
export function recordColumns(rows: Record<string, unknown>[], keyLabel = 'name'): Column<Record<string, unknown>>[] {
  const keys = new Set<string>();
  for (const r of rows) for (const k of Object.keys(r)) keys.add(k);
  keys.delete('__key');
  const show = (v: unknown) => (typeof v === 'string' || typeof v === 'number' ? v : JSON.stringify(v));
  return [
    { key: '__key', label: keyLabel, value: (r) => String(r.__key) },
    ...[...keys].map((k) => ({ key: k, label: k, value: (r: Record<string, unknown>) => (r[k] === undefined ? '' : show(r[k])) })),
  ];
}

/** `{a: {...}, b: {...}}` as rows with `__key`; undefined when the reply is not shaped so. */
export function rowsOf(reply: unknown): Record<string, unknown>[] | undefined {
  if (!reply || typeof reply !== 'object' || Array.isArray(reply)) return undefined;
  const values = Object.entries(reply as Record<string, unknown>);
  if (values.length === 1 && values[0]![1] && typeof values[0]![1] === 'object' && !Array.isArray(values[0]![1])) {
    const inner = rowsOf(values[0]![1]);
    if (inner) return inner;
  }
  if (values.length === 0 || !values.every(([, v]) => v && typeof v === 'object' && !Array.isArray(v))) return undefined;
  return values.map(([k, v]) => ({ __key: k, ...(v as Record<string, unknown>) }));
}
