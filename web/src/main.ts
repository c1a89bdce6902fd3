// microscope's browser view. Preact (3 kB, the React API without its size)
// draws the page; d3-flame-graph (the maintained D3 flame graph, with zoom
// and search built in) draws the flame graph. Every number comes from the
// server's report model (api.ts); the page's state is its URL (state.ts).
import flamegraph from 'd3-flame-graph';
import {select} from 'd3-selection';
import {h, render} from 'preact';
import {useEffect, useRef, useState} from 'preact/hooks';

import type {FlameDatum} from 'd3-flame-graph';
import './style.css';
import {fetchReport, flameRoot, Report} from './api';
import {parseState, reportQuery, stateToSearch, View, VIEWS, ViewState} from './state';

const MIN_PERCENT = 0.1;  // the flame graph's pruning: frames under 0.1% are not drawn

function usePageState(): [ViewState, (s: ViewState) => void] {
  const [state, setState] = useState(parseState(location.search));
  useEffect(() => {
    const onPop = () => setState(parseState(location.search));
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const go = (next: ViewState) => {
    history.pushState(null, '', location.pathname + stateToSearch(next));
    setState(next);
  };
  return [state, go];
}

function percent(p: number): string { return p.toFixed(p >= 10 ? 1 : 2) + '%'; }

function HeaderPanel({report}: {report: Report}) {
  const h0 = report.header;
  const ends = h0.stack_ends ?? {};
  const complete = ends['complete'] ?? 0;
  const stacks = Object.values(ends).reduce((a, b) => a + b, 0);
  const rows: [string, string][] = [
    ['command', h0.command.join(' ')],
    ['duration', (h0.duration_ns / 1e9).toFixed(3) + ' s'],
    ['samples', String(h0.samples)],
    ['stack quality', stacks ? percent((100 * complete) / stacks) + ' complete' : 'no stacks'],
    ['lost', `${h0.lost_records} records, ${h0.lost_samples} samples`],
  ];
  return h(
      'section',
      {class: 'header', 'aria-label': 'capture'},
      h(
          'dl',
          null,
          rows.map(([k, v]) => [h('dt', null, k), h('dd', {'data-field': k}, v)]),
          ),
      (h0.problems ?? []).length > 0 &&
          h(
              'details',
              null,
              h('summary', null, `${h0.problems!.length} kinds of problems`),
              h(
                  'ul',
                  null,
                  h0.problems!.map(
                      (p) => h('li', null, `${p.count} × ${p.kind} (e.g. ${p.example})`)),
                  ),
              ),
  );
}

function FlameGraph(props: {report: Report; search: string; onFocus: (name: string) => void;}) {
  const host = useRef<HTMLDivElement>(null);
  const [matched, setMatched] = useState<string>('');
  useEffect(() => {
    const el = host.current!;
    el.textContent = '';
    const chart =
        flamegraph()
            .width(Math.max(320, el.clientWidth))
            .cellHeight(18)
            .minFrameSize(1)
            .transitionDuration(0)
            .sort(true)
            .inverted(true)  // an icicle: the roots on top, as the call tree reads
            .setLabelHandler(
                (d: FlameDatum) => `${d.data.name}${
                    d.data.module ? ' [' + d.data.module + ']' : ''}: ${percent(d.data.percent)}`,
                )
            // Plain text, case-insensitive: a search is what the user typed, not a regex.
            .setSearchMatch(
                (d: FlameDatum, term: string) =>
                    d.data.name.toLowerCase().includes(term.toLowerCase()),
                )
            .setSearchHandler((results: FlameDatum[], sum: number, total: number) => {
              setMatched(
                  results.length ? `${results.length} frames match, ${
                                       percent((100 * sum) / Math.max(1, total))} of the samples` :
                                   'no frame matches',
              );
            })
            .onClick((d: FlameDatum) => {
              if (d.data.name !== 'all') props.onFocus(d.data.name);
            });
    select(el).datum(flameRoot(props.report)).call(chart);
    if (props.search)
      chart.search(props.search);
    else
      setMatched('');
    return () => chart.destroy();
  }, [props.report, props.search]);
  return h(
      'div',
      null,
      props.search && h('p', {class: 'matched', role: 'status'}, matched),
      h('div', {class: 'flame', ref: host, 'aria-label': 'flame graph'}),
  );
}

function FlatTable({report, onFocus}: {report: Report; onFocus: (name: string) => void}) {
  const [by, setBy] = useState<'self'|'total'>('self');
  const rows = [...report.functions].sort((a, b) => b[by].value - a[by].value).slice(0, 200);
  const heading = (key: 'self'|'total') => h(
      'th',
      {'aria-sort': by === key ? 'descending' : 'none'},
      h('button', {onClick: () => setBy(key)}, key),
  );
  return h(
      'table',
      {class: 'flat'},
      h('thead', null, h('tr', null, heading('self'), heading('total'), h('th', null, 'function'))),
      h(
          'tbody',
          null,
          rows.map(
              (r) => h(
                  'tr',
                  {
                    tabIndex: 0,
                    onClick: () => onFocus(r.function),
                    onKeyDown: (e: KeyboardEvent) => e.key === 'Enter' && onFocus(r.function),
                  },
                  h('td', null, percent(r.self.percent)),
                  h('td', null, percent(r.total.percent)),
                  h('td', null, r.function + (r.module ? ` [${r.module}]` : '')),
                  ),
              ),
          ),
  );
}

function App() {
  const [state, go] = usePageState();
  const [report, setReport] = useState<Report|null>(null);
  const [error, setError] = useState<string>('');
  const query = reportQuery(state, ['tree'], MIN_PERCENT);
  useEffect(() => {
    let live = true;
    fetchReport(query).then(
        (r) => live && (setReport(r), setError('')),
        (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [query]);
  const focus = (name: string) => go({...state, focus: name});
  return h(
      'main',
      null,
      h('h1', null, 'microscope', state.capture && ` — ${state.capture}`),
      error && h('p', {class: 'error', role: 'alert'}, error),
      report && h(HeaderPanel, {report}),
      h(
          'nav',
          {class: 'toolbar'},
          VIEWS.map(
              (v: View) => h(
                  'button',
                  {'aria-pressed': state.view === v, onClick: () => go({...state, view: v})},
                  v === 'flame' ? 'flame graph' : 'functions',
                  ),
              ),
          h('input', {
            type: 'search',
            'aria-label': 'search functions',
            placeholder: 'search',
            value: state.search,
            onChange: (e: Event) => go({...state, search: (e.target as HTMLInputElement).value}),
          }),
          state.focus &&
              h(
                  'span',
                  {class: 'focus'},
                  `focused on ${state.focus} `,
                  h(
                      'button',
                      {'aria-label': 'clear the focus', onClick: () => go({...state, focus: ''})},
                      '×',
                      ),
                  ),
          ),
      report &&
          (state.view === 'flame' ? h(FlameGraph, {report, search: state.search, onFocus: focus}) :
                                    h(FlatTable, {report, onFocus: focus})),
  );
}

render(h(App, null), document.getElementById('app')!);
