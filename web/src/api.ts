// The server's answers (GET /api/report: report --json's document). The
// browser never aggregates: every number it shows is one of these, and
// every figure is written as the server's presentation module writes it
// for the terminal too (the `text` fields and the header's lines).

export interface Cost {
  samples: number;
  value: number;
  percent: number;
  text: string;  // the share as report prints it: "12.34%"
}

// What kind of code a function is (native when absent): kernel, inline,
// python, javascript, interpreted, jit, other.
export interface TreeNode {
  function: string;
  module: string;
  kind?: string;
  self: Cost;
  total: Cost;
  children?: TreeNode[];
  pruned?: boolean;  // the roots under min_percent, as one ("other (pruned)")
}

export interface FunctionRow {
  function: string;
  module: string;
  kind?: string;
  self: Cost;
  total: Cost;
}

export interface Header {
  command: string[];
  mode: string;
  duration_ns: number;
  samples: number;
  value: number;
  unit: string;
  metric: string;
  fully_named_samples: number;
  lost_records: number;
  lost_samples: number;
  stack_ends: Record<string, number>;
  problems?: {kind: string; count: number; example: string}[];
  threads: {tid: number; pid: number; name: string; samples: number}[];
  processes: {pid: number; parent_pid: number; command: string; samples: number}[];
  lines: {label: string; text: string}[];  // report's header, line by line
  // The event sources the recording asked for (python, node: the runtimes'
  // walkers), their state and counts.
  sources?: Record<string, {state: string; values: Record<string, number>}>;
}

export interface DiffRow {
  name: string;
  module?: string;
  side: 'both'|'base'|'other';  // which capture has it
  base_value: number;
  other_value: number;
  base_share: number;
  other_share: number;
  delta: number;  // other_share - base_share: > 0, more of the other capture's time
  delta_text: string;  // "+1.23%", as report --diff prints it
}

export interface DiffNode extends DiffRow {
  children: DiffNode[];
}

export interface Lane {
  tid: number;
  pid?: number;
  name: string;
  total: number;
  buckets: number[];
  off_cpu_ns?: number;
  off_cpu?: Record<string, number[]>;  // nanoseconds off CPU per state, per bucket
  gaps?: string;  // per bucket, a gap of this thread or its process (GAP_CAUSES' letter; ' ' none)
  zones?: string;   // per bucket, the zone that held most of it ('a' is zone_names[0]; ' ' none)
  events?: string;  // per bucket: '|' a mark, '*' a label set, '#' both
}

// A window the recording does not know (capture gaps): not idle time.
export interface GapRow {
  begin_ns: number;
  end_ns: number;
  cause: string;  // "lost records", "throttled", "budget", ...
  count: number;
  pid?: number;
  tid?: number;
  cpu?: number;
}

// A track of another tool's trace (microscope import) on the same columns.
export interface TraceTrack {
  trace: number;
  track: number;
  name: string;  // "group / track"
  kind: string;  // thread, device, async, counter, process
  pid: number;   // the capture's process and thread it is (0: none)
  tid: number;
  spans: number;
  instants: number;
  values: number;
  covered: number[];         // share of each column inside its outermost spans
  instant_counts: number[];  // instants in each column
  counter_max: (number|null)[];  // a counter's largest value in each column
}

export interface Lanes {
  start_ns: number;
  bucket_ns: number;
  lanes: Lane[];
  // With several processes, one per process (its pid, its command as name,
  // no tid): all its threads' samples per column, busiest thread's first.
  processes?: Lane[];
  trace_tracks?: TraceTrack[];
  own_axis_traces?: string[];  // traces not placed on the recording's clock
  gaps?: string;  // per bucket, a gap of every process (GAP_CAUSES' letter; ' ' none)
  gap_rows?: GapRow[];
  zone_names?: string[];  // the program's zones (probes), as lanes' letters name them
}

export interface SourceLine {
  line: number;
  self: Cost;
  total: Cost;
}

export interface SourceFile {
  path: string;
  total: Cost;
  lines: SourceLine[];
  first?: number;  // the line number of text[0]
  text?: string[];
  unreadable?: string;  // why there is no text
}

export interface Source {
  function: string;
  total: Cost;
  without_lines: Cost;
  files: SourceFile[];
}

// A function's machine code (asm=): per module, the symbols holding its
// sampled addresses, instruction by instruction (costs on the sampled ones
// only), or why the module's file could not be read (the sampled file
// offsets alone then).
export interface Instruction {
  address: number;
  size: number;
  text: string;
  target?: string;
  self?: Cost;
  total?: Cost;
}

export interface AssemblyModule {
  path: string;
  build_id: string;
  total: Cost;
  addresses: {offset: number; self: Cost; total: Cost}[];
  ranges?: {symbol: string; start: number; size: number; bytes_left_out: number; instructions: Instruction[]}[];
  outside?: Cost;
  unreadable?: string;
}

export interface Assembly {
  function: string;
  total: Cost;
  not_native: Cost;
  modules: AssemblyModule[];
}

// One thread's samples in time order (views=stack_chart): runs of one
// stack as [start, end, stack, samples] (ns after the start), each stack
// outermost first as indexes into names and modules.
export interface StackChart {
  tid: number;
  thread: string;
  samples: number;
  threads: number;  // threads with kept samples: the busiest is charted
  truncated: boolean;
  runs: [number, number, number, number][];
  stacks: number[][];
  names: string[];
  modules: string[];
}

// A function's place in the call graph (neighbors=NAME).
export interface Neighbor {
  function: string;
  module: string;
  cost: Cost;  // the samples where it called the function, or was called by it
}
export interface Neighbors {
  function: string;
  module: string;
  self: Cost;
  total: Cost;
  callers: Neighbor[];
  more_callers: number;
  callees: Neighbor[];
  more_callees: number;
}

// What happened on each thread over time (views=markers): [kind, tid,
// start, end, depth, name, detail], ns after the start; tid 0 every thread.
export type MarkerRow = [string, number, number, number, number, string, string];
export interface Markers {
  total: number;
  left_out: number;  // the shortest, past the answer's bound
  rows: MarkerRow[];
}

// A zone's occurrence at a percentile of its durations (views=zones).
export interface ZoneAt {
  duration_ns: number;
  tid: number;
  thread: string;
  at_ns: number;
  text: string;
}
// A zone's statistics over the thread and time range asked (report --zones).
export interface ZoneRow {
  zone: string;
  file: string;
  line: number;
  count: number;
  total_ns: number;
  self_ns: number;
  mean_ns: number;
  p50: ZoneAt; p90: ZoneAt; p99: ZoneAt; max: ZoneAt;
  open_at_end: number;
  unmatched_ends: number;
  samples: number;
  sample_percent: number;
  off_cpu_ns: number;
  off_cpu_intervals: number;
}

export interface Report {
  header: Header;
  all: Cost;
  filter?: string;
  kept?: {percent: number; text: string};  // with a filter: its share of the whole
  functions?: FunctionRow[];  // with the views that draw it (flat, tree, inverted)
  tree?: TreeNode[];
  inverted?: TreeNode[];
  lanes?: Lanes;
  off_cpu?: {interval_ns: number; short_ns: number};  // with off-CPU data (part of it)
  // The top rows by change (self_rows and total_rows count them all); the
  // two call trees merged and pruned at min_percent.
  diff?: {
    self: DiffRow[]; total: DiffRow[]; self_rows: number; total_rows: number; tree: DiffNode[];
    pruned: number;
  };
  source?: Source;
  assembly?: Assembly;
  stack_chart?: StackChart;
  neighbors?: Neighbors;
  markers?: Markers;
  zones?: {rows: ZoneRow[]};
}

// The looks a recording's runtimes cannot show, each with the reason:
// "python" without Python frames, "js" without JavaScript frames (both
// are the interpreted look: on another runtime's capture it would show
// that runtime's frames under the wrong name). A capture that does not say
// (an import) disables none.
export function looksWithout(report: Report): Record<string, string> {
  const sources = report.header.sources ?? {};
  const out: Record<string, string> = {};
  const walkers: [string, string, string][] = [['python', 'python', 'Python'], ['js', 'node', 'JavaScript']];
  if (!sources.python && !sources.node) return out;
  for (const [look, source, language] of walkers) {
    const s = sources[source];
    if (!s || (s.values.frames ?? 0) === 0) {
      out[look] = `no ${language} frames${s ? ': ' + s.state.replace(/^off: /, '') : ''}`;
    }
  }
  return out;
}

// Whether the capture has off-CPU time (the offcpu and wall metrics).
export function hasOffCpu(report: Report): boolean {
  return (report.off_cpu?.interval_ns ?? 0) > 0 || (report.off_cpu?.short_ns ?? 0) > 0;
}

// The diff's rows by function (by total share), or null without a diff.
export function diffByFunction(report: Report): Map<string, DiffRow>|null {
  if (!report.diff) return null;
  return new Map(report.diff.total.map((r) => [r.name, r]));
}

export class ApiError extends Error {}

// The captures the server serves (GET /api/captures).
export interface CaptureEntry {
  name: string;
  bytes: number;
}

// The captures served, and how many files of a served directory are past
// what it lists (10,000).
export async function fetchCaptures(): Promise<{captures: CaptureEntry[]; unlisted: number}> {
  const response = await fetch('/api/captures');
  const body = await response.json();
  if (!response.ok) throw new ApiError(body.error ?? `HTTP ${response.status}`);
  return {captures: body.captures as CaptureEntry[], unlisted: Number(body.unlisted ?? 0)};
}

export async function fetchReport(url: string): Promise<Report> {
  const response = await fetch(url);
  const body = await response.json();
  if (!response.ok) throw new ApiError(body.error ?? `HTTP ${response.status}`);
  return body as Report;
}

// The flame graph's input: one root over the tree's roots.
export interface FlameNode {
  name: string;
  value: number;
  module: string;
  kind: string;
  text: string;
  pruned?: boolean;  // stands for the roots pruning left out: no function to focus on
  children: FlameNode[];
}

export function flameRoot(report: Report): FlameNode {
  const roots = report.inverted ?? report.tree ?? [];
  const convert = (n: TreeNode): FlameNode => ({
    name: n.function,
    pruned: n.pruned ?? false,
    value: n.total.value,
    module: n.module,
    kind: n.kind ?? 'native',
    text: n.total.text,
    children: (n.children ?? []).map(convert),
  });
  return {
    name: 'all',
    value: report.all.value,
    module: '',
    kind: 'other',
    text: report.all.text,
    children: roots.map(convert),
  };
}
