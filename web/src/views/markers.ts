// The marker chart and table (the Firefox Profiler's): what happened on each thread
// over time, the program's zones, marks, labels and counters, time off CPU
// with its state and waker, system calls and gaps, each with its start and
// duration. Search and the kinds narrow it; a row selects its time range
// on the timeline (every view follows).
import {h} from 'preact';
import {useMemo, useState} from 'preact/hooks';
import type {Markers, MarkerRow} from '../api';
import {duration} from './common';
import {MarkerChart} from './markerchart';

export type MarkerOrder = 'start'|'duration';
export const MARKER_ROWS_SHOWN = 2000;

// The rows of `kinds` whose name or detail holds `search` (any case), by
// start or by duration (longest first).
export function markerRows(rows: MarkerRow[], search: string, hidden: Set<string>,
                           order: MarkerOrder): MarkerRow[] {
  const term = search.toLowerCase();
  const kept = rows.filter(
      (r) => !hidden.has(r[0]) &&
          (!term || r[5].toLowerCase().includes(term) || r[6].toLowerCase().includes(term)));
  if (order === 'duration') kept.sort((a, b) => (b[3] - b[2]) - (a[3] - a[2]) || a[2] - b[2]);
  return kept;
}

export function MarkerTable(props: {
  markers: Markers; search: string; threads: Map<number, string>;
  window: [number, number];  // the timeline's range (ns after the start), the chart's
  onSelect: (fromNs: number, toNs: number) => void;
}) {
  const {markers} = props;
  const [order, setOrder] = useState<MarkerOrder>('start');
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const kinds = useMemo(() => [...new Set(markers.rows.map((r) => r[0]))], [markers]);
  const rows = useMemo(() => markerRows(markers.rows, props.search, hidden, order),
                       [markers, props.search, hidden, order]);
  const charted = useMemo(() => markerRows(markers.rows, props.search, hidden, 'start'),
                          [markers, props.search, hidden]);
  const shown = rows.slice(0, MARKER_ROWS_SHOWN);
  const heading = (key: MarkerOrder, label: string) =>
      h('th', {'aria-sort': order === key ? (key === 'start' ? 'ascending' : 'descending') : 'none'},
        h('button', {onClick: () => setOrder(key)}, label));
  const thread = (tid: number) => (tid ? `${props.threads.get(tid) ?? 'thread'} (${tid})` : 'every thread');
  return h(
      'div',
      {class: 'markers'},
      h('p', {class: 'hint'},
        `${rows.length} of ${markers.total} markers`,
        markers.left_out > 0 && ` (the ${markers.left_out} shortest left out of the answer)`,
        rows.length > shown.length && `; the first ${shown.length} shown: narrow by search or kind`,
        '. A row selects its time range. ',
        kinds.map((k) => h('label', {class: 'kind'},
                           h('input', {
                             type: 'checkbox',
                             checked: !hidden.has(k),
                             onChange: () => {
                               const next = new Set(hidden);
                               if (next.has(k)) next.delete(k); else next.add(k);
                               setHidden(next);
                             },
                           }),
                           ` ${k}`))),
      h(MarkerChart, {rows: charted, threads: props.threads, window: props.window, onSelect: props.onSelect}),
      h('table', {class: 'flat marker-table', 'aria-label': 'markers'},
        h('thead', null,
          h('tr', null, heading('start', 'start'), heading('duration', 'duration'), h('th', null, 'kind'),
            h('th', null, 'thread'), h('th', null, 'name'), h('th', null, 'detail'))),
        h('tbody', null, shown.map((r) => h(
                                       'tr',
                                       {
                                         tabIndex: 0,
                                         'data-kind': r[0],
                                         onClick: () => props.onSelect(r[2], Math.max(r[3], r[2] + 1)),
                                         onKeyDown: (e: KeyboardEvent) =>
                                             e.key === 'Enter' && props.onSelect(r[2], Math.max(r[3], r[2] + 1)),
                                       },
                                       h('td', null, duration(r[2])),
                                       h('td', null, r[3] > r[2] ? duration(r[3] - r[2]) : '—'),
                                       h('td', null, r[0]),
                                       h('td', null, thread(r[1])),
                                       h('td', {class: 'name', style: {paddingLeft: `${8 + 12 * r[4]}px`}}, r[5]),
                                       h('td', null, r[6]))))));
}
