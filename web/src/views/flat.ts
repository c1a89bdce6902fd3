// Every function the filters kept, by self or total (as report's tables).
import {h} from 'preact';
import type {DiffRow, Report} from '../api';
import {DiffCell} from './diff';

export function FlatTable(props: {
  report: Report; order: 'total' | 'self'; search: string; diff: Map<string, DiffRow>| null;
  onOrder: (order: 'total'|'self') => void;
  onFocus: (name: string) => void;
}) {
  const by = props.order;
  // A search keeps the functions whose names hold it (in any case).
  const term = props.search.toLowerCase();
  const rows = (props.report.functions ?? [])
                   .filter((r) => !term || r.function.toLowerCase().includes(term))
                   .sort((a, b) => b[by].value - a[by].value)
                   .slice(0, 500);
  const heading = (key: 'self'|'total') =>
      h('th', {'aria-sort': by === key ? 'descending' : 'none'},
        h('button', {onClick: () => props.onOrder(key)}, key));
  return h(
      'table',
      {class: 'flat', 'aria-label': 'functions'},
      h('thead', null,
        h('tr', null, heading('self'), heading('total'), props.diff && h('th', null, 'change'),
          h('th', null, 'function'))),
      h(
          'tbody',
          null,
          rows.map((r) => {
            const d = props.diff?.get(r.function);
            return h(
                'tr',
                {
                  tabIndex: 0,
                  onClick: () => props.onFocus(r.function),
                  onKeyDown: (e: KeyboardEvent) => e.key === 'Enter' && props.onFocus(r.function),
                },
                h('td', null, r.self.text),
                h('td', null, r.total.text),
                props.diff && h(DiffCell, {row: d}),
                h('td', null, r.function + (r.module ? ` [${r.module}]` : '')),
            );
          }),
          ),
  );
}
