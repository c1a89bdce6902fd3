// Everything a view shows is decided by this state, and the state lives in
// the page's URL: a link reproduces the view, reloading keeps it.

export type View = 'flame'|'chart'|'tree'|'flat'|'markers'|'source'|'asm'|'diff';
export const VIEWS: readonly View[] = ['flame', 'chart', 'tree', 'flat', 'markers', 'source', 'asm', 'diff'];
export const VIEW_NAMES: Record<View, string> = {
  flame: 'flame graph',
  chart: 'stack chart',
  tree: 'call tree',
  flat: 'functions',
  markers: 'markers',
  source: 'source',
  asm: 'assembly',
  diff: 'changes',  // with a capture to compare with only
};

export interface ViewState {
  capture: string;  // which capture ("" when the server serves one)
  view: View;
  search: string;         // highlighted, not filtered
  focus: string;          // a function: only samples whose stack has it
  thread: string;         // a tid or thread name; "" for all
  zone: string;           // a zone of the program's probes: only samples inside it; "" for all
  time: string;           // "FROM..TO" after the start, as report --time; "" for all
  zoom: string;           // the timeline's zoom levels ("FROM..TO" each, outermost first), comma-separated
  diff: string;           // another capture to compare with; "" for none
  order: 'total'|'self';  // the call tree's and table's order
  callees: '0'|'1';       // "1": the inverted tree (sampled functions first, then their callers)
  metric: string;         // report --metric: cpu, offcpu, wall; "" for the capture's default
  look: string;           // report --look: mixed, python, js, native; "" for mixed
  // The call graph's transforms (report --merge, --collapse, --exclude,
  // --collapse-recursion): names one per line.
  merge: string;          // functions left out of the stacks, their time to their callers
  collapse: string;       // modules shown as one frame per run of theirs
  drop: string;           // functions whose samples are left out
  recursion: '0'|'1';     // "1": a function's recursive calls as one node
  // A call path from the root ("main;run;hot", report --focus-path): only
  // the samples under it, shown from its last function.
  path: string;
}

// The names of a transform's field (one per line), and the field with
// `name` added or taken out.
export function listed(field: string): string[] {
  return field ? field.split('\n') : [];
}
export function toggled(field: string, name: string): string {
  const names = listed(field);
  return (names.includes(name) ? names.filter((n) => n !== name) : [...names, name]).join('\n');
}

export const METRICS = ['cpu', 'offcpu', 'wall'];
export const LOOKS = ['mixed', 'python', 'js', 'native'];

export const DEFAULT_STATE: ViewState = {
  capture: '',
  view: 'flame',
  search: '',
  focus: '',
  thread: '',
  zone: '',
  time: '',
  zoom: '',
  diff: '',
  order: 'total',
  callees: '0',
  metric: '',
  look: '',
  merge: '',
  collapse: '',
  drop: '',
  recursion: '0',
  path: '',
};

const KEYS = Object.keys(DEFAULT_STATE) as (keyof ViewState)[];

export function parseState(search: string): ViewState {
  const params = new URLSearchParams(search);
  const state: ViewState = {...DEFAULT_STATE};
  for (const key of KEYS) {
    const value = params.get(key);
    if (value === null) continue;
    if (key === 'view') {
      if ((VIEWS as readonly string[]).includes(value)) state.view = value as View;
    } else if (key === 'order') {
      if (value === 'total' || value === 'self') state.order = value;
    } else if (key === 'callees' || key === 'recursion') {
      if (value === '0' || value === '1') state[key] = value;
    } else if (key === 'metric' || key === 'look') {
      if ((key === 'metric' ? METRICS : LOOKS).includes(value)) state[key] = value;
    } else {
      state[key] = value;
    }
  }
  return state;
}

// The URL's query for `state`: only what differs from the defaults, in a
// fixed order, so that one view has one URL.
export function stateToSearch(state: ViewState): string {
  const params = new URLSearchParams();
  for (const key of KEYS) {
    if (state[key] !== DEFAULT_STATE[key]) params.set(key, state[key]);
  }
  const text = params.toString();
  return text ? '?' + text : '';
}

// A regex that matches exactly `name` (report's --focus takes a regex).
export function exactly(name: string): string {
  return '^' + name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
}

// A query's parameters every view shares: the capture, what is measured
// and how stacks look, and the thread and time range shown.
function shared(state: ViewState, views: string): URLSearchParams {
  const params = new URLSearchParams();
  if (state.capture) params.set('capture', state.capture);
  params.set('views', views);
  if (state.metric) params.set('metric', state.metric);
  if (state.look) params.set('look', state.look);
  if (state.thread) params.set('thread', state.thread);
  if (state.zone) params.set('zone', state.zone);
  if (state.time) params.set('time', state.time);
  for (const name of listed(state.merge)) params.append('merge', name);
  for (const name of listed(state.collapse)) params.append('collapse', name);
  if (state.drop) params.set('exclude', listed(state.drop).map(exactly).join('|'));
  if (state.recursion === '1') params.set('collapse_recursion', '1');
  if (state.path) params.set('focus_path', state.path);
  return params;
}

// The API's query for the views the page shows under `state`: the tree
// (or the inverted tree) with the filters, and the diff when one is asked.
export function reportQuery(state: ViewState, minPercent: number): string {
  const params = shared(state, state.callees === '1' ? 'inverted' : 'tree');
  params.set('min_percent', String(minPercent));
  params.set('top', '200');
  if (state.focus) params.set('focus', exactly(state.focus));
  if (state.diff) params.set('diff', state.diff);
  return '/api/report?' + params.toString();
}

// A regex (report's --focus) that finds `text` in a name, in any case: the
// flame graph's search, asked of the server.
export function containing(text: string): string {
  return [...text]
      .map((ch) => {
        const lower = ch.toLowerCase(), upper = ch.toUpperCase();
        if (lower !== upper) return `[${lower}${upper}]`;
        return ch.replace(/[.*+?^${}()|[\]\\\/-]/g, '\\$&');
      })
      .join('');
}

// The search's query: the share of the samples (in the thread and time
// range shown; not only the focused ones) with a function whose name
// holds the search on their stack.
export function searchQuery(state: ViewState): string {
  const params = shared(state, 'threads');
  params.set('focus', containing(state.search));
  return '/api/report?' + params.toString();
}

// The source view's query: the focused function's lines, over the samples
// of the thread and time range shown (their shares of those).
export function sourceQuery(state: ViewState): string {
  const params = shared(state, 'threads');
  params.set('source', state.focus);
  return '/api/report?' + params.toString();
}

// The assembly view's query: the focused function's machine code by
// instruction, over the same samples as the source view's.
export function asmQuery(state: ViewState): string {
  const params = shared(state, 'threads');
  params.set('asm', state.focus);
  return '/api/report?' + params.toString();
}

// The focus path for a node of the graph shown (its functions from the
// graph's root): under a focus path the graph starts at the path's last
// function, so the path's earlier functions come first.
export function subtreePath(state: ViewState, fromRoot: string[]): string {
  const above = state.path ? state.path.split(';').slice(0, -1) : [];
  return [...above, ...fromRoot].join(';');
}

// The timeline's zoom levels, outermost first.
export function zoomLevels(state: ViewState): string[] {
  return state.zoom ? state.zoom.split(',') : [];
}

// The most threads the timeline's answer holds (the busiest first).
export const MAX_LANES = 1000;

// The sidebar's query: the focused function's cost, callers and callees
// over the samples of the thread, zone and time range shown (not only the
// focused ones: shares of those).
export function neighborsQuery(state: ViewState): string {
  const params = shared(state, 'threads');
  params.set('neighbors', state.focus);
  params.set('top', '20');
  return '/api/report?' + params.toString();
}

// The files the page downloads of what it shows (the capture under the
// thread, zone, time range, focus, metric and look shown), as convert
// writes them: format and what the menu calls it.
export const EXPORTS: readonly [string, string][] = [
  ['pprof', 'pprof (.pb.gz)'],
  ['chrome', 'Chrome trace (.json)'],
  ['speedscope', 'speedscope (.json)'],
  ['folded', 'folded stacks'],
];

export function exportQuery(state: ViewState, format: string): string {
  const params = shared(state, '');
  params.delete('views');
  params.set('format', format);
  if (state.focus) params.set('focus', exactly(state.focus));
  return '/api/export?' + params.toString();
}

// The zone sidebar's query: every zone's statistics over the thread and
// time range shown (not only inside the chosen zone).
export function zonesQuery(state: ViewState): string {
  const params = shared(state, 'zones');
  params.delete('zone');
  return '/api/report?' + params.toString();
}

// The marker table's query: the markers of the thread, zone and time range
// shown.
export function markersQuery(state: ViewState): string {
  return '/api/report?' + shared(state, 'markers').toString();
}

// The stack chart's query: the chosen thread's samples (the busiest
// thread's without one) in time order, with the filters.
export function stackChartQuery(state: ViewState): string {
  const params = shared(state, 'stack_chart');
  if (state.focus) params.set('focus', exactly(state.focus));
  return '/api/report?' + params.toString();
}

// The timeline's query: every thread's lanes over the whole recording, or
// the range zoomed into (the time range selected on it, the thread, zone
// and focus filter the other views only).
export function lanesQuery(state: ViewState, columns: number): string {
  const params = shared({...state, time: zoomLevels(state).at(-1) ?? '', thread: '', zone: ''}, 'lanes');
  params.set('lane_width', String(columns));
  params.set('top', String(MAX_LANES));
  return '/api/report?' + params.toString();
}

// "FROM..TO" (report --time) for a selection of the timeline, in seconds
// after its start, to the microsecond.
export function timeRange(fromNs: number, toNs: number): string {
  const s = (ns: number) => (Math.max(0, ns) / 1e9).toFixed(6).replace(/\.?0+$/, '') + 's';
  return `${s(Math.min(fromNs, toNs))}..${s(Math.max(fromNs, toNs))}`;
}

// How a thread is named in the thread picker: "name (tid)".
export function threadLabel(t: {name: string; tid: number}): string {
  return `${t.name} (${t.tid})`;
}

// The thread filter (a tid) a picker's text names: "name (tid)", a bare
// tid, or a name; "" for none.
export function threadFromLabel(text: string): string {
  const t = text.trim();
  const m = /\((\d+)\)$/.exec(t);
  return m ? m[1] : t;
}
