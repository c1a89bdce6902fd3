// The diff of two captures: a row's change is its share in the other
// capture minus its share in this one, in points; red (slower) when it
// grew, blue (faster) when not. The table lists the functions of both
// captures (each with the side it is on), sortable by any column.
import {h} from 'preact';
import {useState} from 'preact/hooks';
import type {DiffRow, Report} from '../api';

export function DiffCell({row}: {row: DiffRow|undefined}) {
  const delta = row?.delta ?? 0;
  return h(
      'td',
      {class: delta > 0 ? 'slower' :
           delta < 0    ? 'faster' :
                          ''},
      row ? row.delta_text : '',
  );
}

export type DiffOrder = 'change'|'base'|'other'|'name';

// Rows in `order` (the change by its size, larger first; shares larger
// first; names as text).
export function sortDiffRows(rows: DiffRow[], order: DiffOrder): DiffRow[] {
  const by: Record<DiffOrder, (a: DiffRow, b: DiffRow) => number> = {
    change: (a, b) => Math.abs(b.delta) - Math.abs(a.delta) || a.name.localeCompare(b.name),
    base: (a, b) => b.base_share - a.base_share || a.name.localeCompare(b.name),
    other: (a, b) => b.other_share - a.other_share || a.name.localeCompare(b.name),
    name: (a, b) => a.name.localeCompare(b.name),
  };
  return [...rows].sort(by[order]);
}

export const SIDE_NAMES: Record<string, string> = {
  both: 'both',
  base: 'only this capture',
  other: 'only the other',
};

const percent = (share: number) => `${(100 * share).toFixed(2)}%`;

export function DiffTable(props: {report: Report; other: string; onFocus: (name: string) => void}) {
  const [order, setOrder] = useState<DiffOrder>('change');
  const [which, setWhich] = useState<'total'|'self'>('total');
  const diff = props.report.diff;
  if (!diff) return null;
  const rows = sortDiffRows(diff[which], order);
  const count = which === 'total' ? diff.total_rows : diff.self_rows;
  const heading = (key: DiffOrder, label: string) => h(
      'th', {'aria-sort': order === key ? (key === 'name' ? 'ascending' : 'descending') : 'none'},
      h('button', {onClick: () => setOrder(key)}, label));
  return h(
      'div',
      {class: 'diff'},
      h('p', {class: 'hint'},
        `Shares of each capture's total: this one (${props.report.header.samples} samples) and ${
            props.other}. ${rows.length} of ${count} functions, the largest changes; `,
        h('button', {
          'aria-pressed': which === 'self',
          onClick: () => setWhich(which === 'self' ? 'total' : 'self'),
        },
          which === 'self' ? 'self share' : 'total share')),
      h(
          'table',
          {class: 'flat', 'aria-label': 'diff'},
          h('thead', null,
            h('tr', null, heading('base', 'this'), heading('other', 'other'),
              heading('change', 'change'), heading('name', 'function'), h('th', null, 'in'))),
          h(
              'tbody',
              null,
              rows.map((r) => h(
                           'tr',
                           {
                             tabIndex: 0,
                             'data-side': r.side,
                             onClick: () => props.onFocus(r.name),
                             onKeyDown: (e: KeyboardEvent) =>
                                 e.key === 'Enter' && props.onFocus(r.name),
                           },
                           h('td', null, percent(r.base_share)),
                           h('td', null, percent(r.other_share)),
                           h(DiffCell, {row: r}),
                           h('td', {class: 'name'}, r.name + (r.module ? ` [${r.module}]` : '')),
                           h('td', {class: 'side'}, SIDE_NAMES[r.side] ?? r.side),
                           )),
              ),
          ),
  );
}
