// Everything a view shows is decided by this state, and the state lives in
// the page's URL: a link reproduces the view, reloading keeps it.

export type View = 'flame'|'flat';
export const VIEWS: readonly View[] = ['flame', 'flat'];

export interface ViewState {
  capture: string;  // which capture ("" when the server serves one)
  view: View;
  search: string;  // highlighted, not filtered
  focus: string;   // a function: only samples whose stack has it
  thread: string;  // a tid or thread name; "" for all
  time: string;    // "FROM..TO" after the start, as report --time; "" for all
}

export const DEFAULT_STATE: ViewState = {
  capture: '',
  view: 'flame',
  search: '',
  focus: '',
  thread: '',
  time: '',
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

// The API's parameters for `state` and the views the page shows.
export function reportQuery(state: ViewState, views: string[], minPercent: number): string {
  const params = new URLSearchParams();
  if (state.capture) params.set('capture', state.capture);
  if (views.length) params.set('views', views.join(','));
  params.set('min_percent', String(minPercent));
  params.set('top', '200');
  if (state.focus) params.set('focus', exactly(state.focus));
  if (state.thread) params.set('thread', state.thread);
  if (state.time) params.set('time', state.time);
  return '/api/report?' + params.toString();
}
