// microscope's browser view. Preact (3 kB, the React API without its size)
// draws the page; the flame graph is drawn on a canvas (views/flamecanvas.ts).
// Every number comes from the server's report model (api.ts): the browser
// never aggregates samples. The page's state is its URL (state.ts).
import './style.css';

import {h, render} from 'preact';
import {useEffect, useLayoutEffect, useMemo, useRef, useState} from 'preact/hooks';

import {CaptureEntry, diffByFunction, fetchCaptures, fetchReport, hasOffCpu, looksWithout, Report} from './api';
import {EXPORTS, exportQuery, lanesQuery, listed, LOOKS, toggled, zonesQuery, markersQuery, METRICS, parseState, reportQuery, searchQuery, neighborsQuery, sourceQuery, asmQuery, stackChartQuery, stateToSearch, subtreePath, threadFromLabel, threadLabel, timeRange, View, zoomLevels, VIEW_NAMES, VIEWS, ViewState,} from './state';
import {DiffTable} from './views/diff';
import {download} from './views/flame';
import {CanvasFlameGraph as FlameGraph, flamePngBlob, flameSvgText} from './views/flamecanvas';
import {FlatTable} from './views/flat';
import {HeaderPanel} from './views/header';
import {LanesView, selectedRange} from './views/lanes';
import {MarkerTable} from './views/markers';
import {Sidebar, Transform, ZoneSidebar} from './views/sidebar';
import {AssemblyView} from './views/assembly';
import {SourceView} from './views/source';
import {StackChartView} from './views/stackchart';
import {CallTree} from './views/tree';

const MIN_PERCENT = 0.1;  // the trees' pruning: nodes under 0.1% are not sent
const LANE_COLUMNS = 400;

function usePageState(): [ViewState, (s: ViewState) => void] {
  const [state, setState] = useState(parseState(location.search));
  useEffect(() => {
    const onPop = () => setState(parseState(location.search));
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const go = (next: ViewState) => {
    if (stateToSearch(next) === location.search) return;
    history.pushState(null, '', location.pathname + stateToSearch(next));
    setState(next);
  };
  return [state, go];
}

// The answer to `query` (none for ''), or the error the server gave, and
// the query the answer shown is for (the last one's, until it comes).
// `growth` counts the times the capture grew: each asks again.
// The question is sent as the page renders (a layout effect), not after
// its paint as an effect is: on a first paint that is some 100 ms sooner.
function useReport(query: string, growth = 0): [Report|null, string, string] {
  const [report, setReport] = useState<[Report, string]|null>(null);
  const [error, setError] = useState('');
  useLayoutEffect(() => {
    let live = true;
    if (!query) return setReport(null);
    fetchReport(query).then(
        (r) => live && (setReport([r, query]), setError('')),
        (e: Error) => live && setError(e.message),
    );
    return () => {
      live = false;
    };
  }, [query, growth]);
  return [report?.[0] ?? null, error, report?.[1] ?? ''];
}

// Which capture the page shows and which it compares with, when the server
// serves more than one (serve DIR, or serve A --diff B).
function CapturePicker(
    props: {captures: CaptureEntry[]; state: ViewState; go: (s: ViewState) => void;}) {
  const {captures, state, go} = props;
  if (captures.length < 2) return null;
  const names = captures.map((c) => c.name);
  return h(
      'nav',
      {class: 'captures', 'aria-label': 'captures'},
      h(Choice, {
        label: 'capture',
        value: state.capture,
        fallback: 'choose one',
        options: names,
        onChange: (capture: string) => go({...state, capture, focus: '', time: '', path: ''}),
      }),
      h(Choice, {
        label: 'compare with',
        value: state.diff,
        fallback: 'none',
        options: names.filter((n) => n !== state.capture),
        onChange: (diff: string) => go({...state, diff}),
      }),
  );
}

// A labelled choice of a query parameter ("" for the default); an option
// that does not apply is disabled, its reason its title.
function Choice(props: {
  label: string; value: string; fallback: string; options: string[];
  onChange: (value: string) => void; disabled?: Record<string, string>;
}) {
  return h(
      'label',
      {class: 'choice'},
      props.label + ' ',
      h(
          'select',
          {
            'aria-label': props.label,
            value: props.value,
            onChange: (e: Event) => props.onChange((e.target as HTMLSelectElement).value),
          },
          h('option', {value: ''}, props.fallback),
          props.options.map(
              (o) => h('option',
                       {value: o, disabled: !!props.disabled?.[o], title: props.disabled?.[o]},
                       props.disabled?.[o] ? `${o} (${props.disabled[o]})` : o)),
          ),
  );
}

// Every thread of the capture, reachable by name or tid (the timeline draws
// the busiest): typing filters the list, Enter or a choice filters every view.
function ThreadPicker(props: {report: Report; state: ViewState; go: (s: ViewState) => void}) {
  const {report, state, go} = props;
  const threads = report.header.threads;
  const current = threads.find((t) => String(t.tid) === state.thread);
  const choose = (text: string) => go({...state, thread: threadFromLabel(text)});
  return h(
      'span',
      {class: 'thread-picker'},
      h('input', {
        type: 'search',
        list: 'threads',
        'aria-label': 'thread',
        placeholder: `all ${threads.length} threads`,
        value: current ? threadLabel(current) : state.thread,
        onKeyDown: (e: KeyboardEvent) =>
            e.key === 'Enter' && choose((e.target as HTMLInputElement).value),
        onChange: (e: Event) => choose((e.target as HTMLInputElement).value),
      }),
      h('datalist', {id: 'threads'},
        threads.map((t) => h('option', {value: threadLabel(t)}, `${t.samples} samples`))),
  );
}

// How often the page asks the server for its captures' sizes: a
// --continuous directory grows as its recorder writes segments.
const POLL_MS = 2000;

// The captures served (a served directory's as they come and go), and the
// files past its listing's bound.
function useCaptures(): [CaptureEntry[]|null, number] {
  const [captures, setCaptures] = useState<CaptureEntry[]|null>(null);
  const [unlisted, setUnlisted] = useState(0);
  useLayoutEffect(() => {  // asked at the first render (useReport says why)
    let last = '';
    const ask = () => {
      if (document.hidden) return;
      fetchCaptures().then((c) => {
        const text = JSON.stringify(c);
        if (text !== last) (last = text, setCaptures(c.captures), setUnlisted(c.unlisted));
      }, () => last || setCaptures([]));
    };
    ask();
    const timer = setInterval(ask, POLL_MS);
    return () => clearInterval(timer);
  }, []);
  return [captures, unlisted];
}

// How many times the captures shown (`names`) changed size since they were
// first shown, and when last: each time the views ask again.
function useGrowth(captures: CaptureEntry[]|null, names: string[]): [number, string] {
  const seen = useRef<{names: string; sizes: string}|null>(null);
  const [growth, setGrowth] = useState<[number, string]>([0, '']);
  const key = names.join('\n');
  const sizes = captures ? names.map((n) => captures.find((c) => c.name === n)?.bytes ?? 0).join(',') : null;
  useEffect(() => {
    if (sizes === null) return;
    const before = seen.current;
    if (before && before.names === key && before.sizes !== sizes)
      setGrowth(([n]) => [n + 1, new Date().toLocaleTimeString()]);
    seen.current = {names: key, sizes};
  }, [key, sizes]);
  return growth;
}

// `/` goes to the search box (as in the Firefox Profiler and GitHub);
// Escape there clears the search.
function useSearchKeys() {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const box = document.querySelector<HTMLInputElement>('input[aria-label="search functions"]');
      const typing = e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement;
      if (e.key === '/' && !typing && box) {
        e.preventDefault();
        box.focus();
        box.select();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);
}

// The call graph's transforms in force (the URL's merge, collapse, drop and
// recursion), each taken back by its button; and recursion's switch.
function TransformsBar(props: {state: ViewState; go: (s: ViewState) => void}) {
  const {state, go} = props;
  const chips = (kind: Transform, says: string) => listed(state[kind]).map(
      (name) => h('button', {
        class: 'chip',
        'aria-label': `undo: ${says} ${name}`,
        onClick: () => go({...state, [kind]: toggled(state[kind], name)}),
      }, `${says} ${name} ×`));
  return h('nav', {class: 'transforms-bar', 'aria-label': 'transforms'},
           h('label', null,
             h('input', {
               type: 'checkbox',
               checked: state.recursion === '1',
               onChange: () => go({...state, recursion: state.recursion === '1' ? '0' : '1'}),
             }),
             ' collapse recursion'),
           chips('merge', 'merged'), chips('collapse', 'collapsed'), chips('drop', 'dropped'),
           state.path && h('button', {
             class: 'chip',
             'aria-label': `undo: focus on the subtree ${state.path}`,
             onClick: () => go({...state, path: ''}),
           }, `subtree ${state.path.split(';').join(' › ')} ×`));
}

// Files of what the page shows: the server's exports of the selection, and
// the flame graph as drawn.
function ExportMenu(props: {state: ViewState}) {
  const {state} = props;
  const base = (state.capture || 'capture').replace(/\.mscap$/, '').replace(/[^A-Za-z0-9._-]/g, '_');
  const saveSvg = () => {
    const svg = flameSvgText();
    if (svg) download(`${base}-flame.svg`, svg, 'image/svg+xml');
  };
  const savePng = async () => download(`${base}-flame.png`, await flamePngBlob(), 'image/png');
  return h('details', {class: 'export'},
           h('summary', null, 'export'),
           h('div', {class: 'export-menu', role: 'menu'},
             h('p', {class: 'hint'}, 'what is shown: its thread, zone, time range, focus, transforms, metric and look'),
             EXPORTS.map(([format, label]) => h('a', {role: 'menuitem', href: exportQuery(state, format), download: ''}, label)),
             state.view === 'flame' && h('button', {role: 'menuitem', onClick: saveSvg}, 'flame graph (.svg)'),
             state.view === 'flame' && h('button', {role: 'menuitem', onClick: savePng}, 'flame graph (.png)')));
}

// The range the charts under the timeline draw: the selected one, else the
// timeline's (zoomed) one, else the whole recording (ns after its start).
function shownRange(state: ViewState, report: Report): [number, number] {
  const span = report.header.duration_ns;
  return selectedRange(state.time || (zoomLevels(state).at(-1) ?? ''), span) ?? [0, span];
}

function App() {
  const [state, go] = usePageState();
  useSearchKeys();
  const [captures, unlisted] = useCaptures();
  // With several captures served and none named, the page asks which (and
  // asks nothing before it knows how many).
  const choose = !state.capture && (captures === null || captures.length > 1);
  const shownNames = [state.capture || captures?.[0]?.name || '', state.diff].filter(Boolean);
  const [growth, grownAt] = useGrowth(captures, shownNames);
  const [report, error] = useReport(choose ? '' : reportQuery(state, MIN_PERCENT), growth);
  const [lanes, , lanesFor] = useReport(choose ? '' : lanesQuery(state, LANE_COLUMNS), growth);
  const [source] = useReport(state.view === 'source' && state.focus ? sourceQuery(state) : '', growth);
  const [assembly] = useReport(state.view === 'asm' && state.focus ? asmQuery(state) : '', growth);
  const sidebar = (!!state.focus || !!state.zone) && state.view !== 'source' && state.view !== 'asm' &&
      state.view !== 'diff';
  const [neighbors] = useReport(sidebar && state.focus && !choose ? neighborsQuery(state) : '', growth);
  const [zoneStats] = useReport(sidebar && state.zone && !choose ? zonesQuery(state) : '', growth);
  const [marked] = useReport(state.view === 'markers' && !choose ? markersQuery(state) : '', growth);
  const [charted] = useReport(state.view === 'chart' && !choose ? stackChartQuery(state) : '', growth);
  const [found, searchError] = useReport(state.search ? searchQuery(state) : '', growth);
  const searchShare = searchError ? searchError :
      found                       ? `on the stacks of ${found.kept?.text} of the samples${
                  state.focus ? ' (focused or not)' : ''                      }` :
                                    '…';
  const focus = (name: string) => go({...state, focus: name});
  const order = (o: 'total'|'self') => go({...state, order: o});
  // One map per answer: the views redraw when it changes, not at each render.
  const diff = useMemo(() => (report ? diffByFunction(report) : null), [report]);
  const roots = report ? (report.inverted ?? report.tree ?? []) : [];
  return h(
      'main',
      {'data-ready': report ? 'yes' : 'no'},
      h(
          'h1',
          null,
          'microscope',
          state.capture && ` — ${state.capture}`,
          state.diff && ` compared with ${state.diff}`,
          ),
      h(CapturePicker, {captures: captures ?? [], state, go}),
      choose && captures &&
          h('p', {class: 'hint'}, `${captures!.length} captures are served: choose one.`),
      unlisted > 0 &&
          h('p', {class: 'hint'},
            `${unlisted} more capture files in the served directory are not listed (past ${
                captures?.length ?? 0})`),
      error && h('p', {class: 'error', role: 'alert'}, error),
      growth > 0 &&
          h('p', {class: 'grown', role: 'status'},
            `the recording grew: every view shows it as of ${grownAt}`),
      report && h(HeaderPanel, {report}),
      lanes?.lanes && h(LanesView, {
        lanes: lanes.lanes,
        dataTime: new URLSearchParams(lanesFor.split('?')[1] ?? '').get('time') ?? '',
        selected: state.time,
        thread: state.thread,
        onThread: (tid: number) =>
            go({...state, thread: state.thread === String(tid) ? '' : String(tid)}),
        zoom: zoomLevels(state),
        // Zoomed into a range, every view shows that range.
        onZoom: (levels: string[]) => go({...state, zoom: levels.join(','), time: levels.at(-1) ?? ''}),
        onSelect: (from: number, to: number) => go({...state, time: timeRange(from, to)}),
        onClear: () => go({...state, time: ''}),
      }),
      h(
          'nav',
          {class: 'toolbar', 'aria-label': 'views'},
          VIEWS.filter((v: View) => v !== 'diff' || state.diff)
              .map(
              (v: View) => h(
                  'button',
                  {'aria-pressed': state.view === v, onClick: () => go({...state, view: v})},
                  VIEW_NAMES[v],
                  ),
              ),
          h(
              'button',
              {
                'aria-pressed': state.callees === '1',
                title: 'sampled functions first, then their callers',
                onClick: () => go({...state, callees: state.callees === '1' ? '0' : '1'}),
              },
              'inverted',
              ),
          h(Choice, {
            label: 'metric',
            value: state.metric,
            fallback: 'default',
            options: METRICS,
            onChange: (metric: string) => go({...state, metric}),
            disabled: report && !hasOffCpu(report) ?
                {offcpu: 'no off-CPU data: record --off-cpu', wall: 'no off-CPU data: record --off-cpu'} :
                {},
          }),
          report && h(ThreadPicker, {report, state, go}),
          lanes?.lanes?.zone_names?.length &&
              h(Choice, {
                label: 'zone',
                value: state.zone,
                fallback: 'all',
                options: lanes.lanes.zone_names,
                onChange: (zone: string) => go({...state, zone}),
              }),
          h(Choice, {
            label: 'look',
            value: state.look,
            fallback: 'mixed',
            options: LOOKS.slice(1),
            onChange: (look: string) => go({...state, look}),
            disabled: report ? looksWithout(report) : {},
          }),
          h('input', {
            type: 'search',
            'aria-label': 'search functions',
            placeholder: 'search',
            value: state.search,
            // Searched when committed (Enter, or leaving the box), not at each key.
            onKeyDown: (e: KeyboardEvent) => {
              if (e.key === 'Enter') go({...state, search: (e.target as HTMLInputElement).value});
              if (e.key === 'Escape') {
                (e.target as HTMLInputElement).value = '';
                (e.target as HTMLInputElement).blur();
                if (state.search) go({...state, search: ''});
              }
            },
            onChange: (e: Event) => go({...state, search: (e.target as HTMLInputElement).value}),
          }),
          report && h(ExportMenu, {state}),
          state.focus &&
              h(
                  'span',
                  {class: 'focus'},
                  `focused on ${state.focus} `,
                  h('button',
                    {'aria-label': 'clear the focus', onClick: () => go({...state, focus: ''})},
                    '×'),
                  ),
          ),
      h(TransformsBar, {state, go}),
      // The charts drawn against the timeline's time keep its width: the
      // sidebar goes under them.
      report && h('div', {
        class: !sidebar ? 'content' :
            state.view === 'chart' || state.view === 'markers' ? 'content with-sidebar under' :
                                                                 'content with-sidebar',
      },
        h('div', {class: 'view'},
          state.view === 'flame' ?
               h(FlameGraph, {
                 report, search: state.search, searchShare, diff, onFocus: focus,
                 onSubtree: state.callees === '1' || diff ? undefined :
                     (names: string[]) => go({...state, path: subtreePath(state, names)}),
               }) :
               state.view === 'tree' ?
               h(CallTree, {
                 key: reportQuery(state, MIN_PERCENT),
                 roots,
                 order: state.order,
                 search: state.search,
                 diff,
                 onOrder: order,
                 onFocus: focus,
               }) :
               state.view === 'source' ?
               h(SourceView, {report: source, focus: state.focus}) :
               state.view === 'asm' ?
               h(AssemblyView, {report: assembly, focus: state.focus}) :
               state.view === 'chart' ?
               (charted?.stack_chart ? h(StackChartView, {chart: charted.stack_chart, onFocus: focus, window: shownRange(state, report)}) :
                                       h('p', {class: 'hint'}, 'the stack chart is loading…')) :
               state.view === 'markers' ?
               (marked?.markers ? h(MarkerTable, {
                 markers: marked.markers,
                 search: state.search,
                 threads: new Map(report.header.threads.map((t) => [t.tid, t.name])),
                 window: shownRange(state, report),
                 onSelect: (from: number, to: number) => go({...state, time: timeRange(from, to)}),
               }) :
                                  h('p', {class: 'hint'}, 'the markers are loading…')) :
               state.view === 'diff' && state.diff ?
               h(DiffTable, {report, other: state.diff, onFocus: focus}) :
               h(FlatTable, {
                 report,
                 order: state.order,
                 search: state.search,
                 diff,
                 onOrder: order,
                 onFocus: focus,
               })),
        sidebar && h('div', {class: 'sidebars'},
          state.zone && h(ZoneSidebar, {
            report: zoneStats,
            zone: state.zone,
            onSelect: (from: number, to: number) => go({...state, time: timeRange(from, to)}),
          }),
          state.focus && h(Sidebar, {
            report: neighbors,
            onFocus: focus,
            onSource: () => go({...state, view: 'source'}),
            onAssembly: () => go({...state, view: 'asm'}),
            // The focused function merged or dropped is gone from every
            // view: the focus goes with it.
            onTransform: (kind: Transform, name: string) =>
                go({...state, focus: kind === 'collapse' ? state.focus : '', [kind]: toggled(state[kind], name)}),
          }))),
  );
}

render(h(App, null), document.getElementById('app')!);
