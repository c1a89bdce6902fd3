// The timeline: one lane per thread, its samples' density per column and
// its time off CPU coloured by state, gaps (windows the recording does not
// know) hatched by cause, then the tracks of other tools' traces imported
// into the capture (their spans' cover, instants and counters), and a row
// of the gaps of every process; dragging across it selects a time range that filters every
// other view (state.time), as report --time.
import {h} from 'preact';
import {useLayoutEffect, useRef, useState} from 'preact/hooks';
import {timeRange} from '../state';
import type {Lane, Lanes, TraceTrack} from '../api';
import {duration} from './common';

export const LANE_HEIGHT = 18;
export const LABEL_WIDTH = 160;  // the lanes' names; the charts below align with it
export const IMPORTED_COLOR = '#8e6bbf';
const PROCESS_COLOR = '#4a7ebb';

// What an imported track's label says when hovered.
export function trackTitle(t: TraceTrack): string {
  const parts = [`${t.kind} track of an imported trace`];
  if (t.spans) parts.push(`${t.spans} spans`);
  if (t.instants) parts.push(`${t.instants} instants`);
  if (t.values) parts.push(`${t.values} counter values`);
  if (t.tid) parts.push(`thread ${t.tid}`);
  else if (t.pid) parts.push(`process ${t.pid}`);
  return parts.join(', ');
}

// What a gap's letter in the lanes stands for (report --lanes draws the same).
export const GAP_CAUSES: Record<string, string> = {
  L: 'lost records',
  T: 'throttled',
  B: 'budget: one sample in N kept',
  W: 'walker not yet on',
  S: 'segment missing',
  A: 'not yet attached',
};
export const GAP_COLOR = '#c0392b';

// The causes a row of gap letters holds, for its label's title.
export function gapTitle(gaps: string): string {
  const causes = [...new Set(gaps.replace(/ /g, ''))].map((c) => GAP_CAUSES[c] ?? c);
  return causes.length ? `gaps, not known (not idle): ${causes.join(', ')}` : '';
}

// One path of a rectangle (`add`) per column whose value is not 0, filled
// once in one style: set at each rectangle, the style cost a timeline of
// 50 lanes some 80 ms of its drawing.
function fillColumns(g: CanvasRenderingContext2D, values: number[], style: string, alpha: number,
                     add: (value: number, column: number) => void) {
  g.fillStyle = style;
  g.globalAlpha = alpha;
  g.beginPath();
  values.forEach((v, i) => v > 0 && add(v, i));
  g.fill();
  g.globalAlpha = 1;
}

// Hatches the columns of `gaps` that hold a letter, on the row at y.
function drawGaps(g: CanvasRenderingContext2D, gaps: string|undefined, y: number, w: number) {
  if (!gaps) return;
  g.strokeStyle = GAP_COLOR;
  g.globalAlpha = 0.8;
  g.lineWidth = 1;
  for (let i = 0; i < gaps.length; i++) {
    if (gaps[i] === ' ') continue;
    g.beginPath();
    for (let x = i * w - LANE_HEIGHT; x < (i + 1) * w; x += 4) {
      g.moveTo(Math.max(i * w, x), y + LANE_HEIGHT - Math.max(0, i * w - x));
      g.lineTo(Math.min((i + 1) * w, x + LANE_HEIGHT), y + Math.max(0, x + LANE_HEIGHT - (i + 1) * w));
    }
    g.stroke();
  }
  g.globalAlpha = 1;
}

// Off-CPU states, as the capture names them.
export const STATE_COLORS: Record<string, string> = {
  sleeping: '#7aa6da',
  uninterruptible: '#d9822b',
  preempted: '#b5a642',
  other: '#999999',
  blocked: '#8fa8c8',
  runnable: '#c9b458',
};

// The most thread lanes drawn; the thread picker reaches the others.
export const DRAWN_LANES = 64;

// A row of the timeline: a thread's lane, or (with several processes) a
// process's heading with its lane from the server (all its threads' samples).
export type LaneRow = {kind: 'thread'; lane: Lane}|
    {kind: 'process'; pid: number; name: string; lane: Lane; threads: number; collapsed: boolean};

// A track the user hid: a thread's ('t' and its tid) or a process's ('p'
// and its pid, its threads with it); a thread's tid may be its pid.
export const trackKey = (kind: 'thread'|'process', id: number) => `${kind[0]}${id}`;

// The timeline's rows: without processes (one process), the threads' lanes
// as they come (busiest first); with them, each process's heading, in their
// order, and, unless collapsed, its drawn threads under it. Hidden tracks
// (trackKey) are left out.
export function laneRows(lanes: Lane[], processes: Lane[], collapsed: Set<number>,
                         hidden: Set<string> = new Set()): LaneRow[] {
  const shown = lanes.filter((l) => !hidden.has(trackKey('thread', l.tid)));
  if (!processes.length) return shown.map((lane) => ({kind: 'thread', lane}));
  const rows: LaneRow[] = [];
  for (const p of processes) {
    const pid = p.pid ?? 0;
    if (hidden.has(trackKey('process', pid))) continue;
    const threads = shown.filter((l) => l.pid === pid);
    if (!threads.length) continue;  // none of its threads drawn
    rows.push({kind: 'process', pid, name: p.name || `process ${pid}`, threads: threads.length,
               collapsed: collapsed.has(pid), lane: {...p, tid: pid}});
    if (!collapsed.has(pid)) rows.push(...threads.map((lane): LaneRow => ({kind: 'thread', lane})));
  }
  return rows;
}

// A zone's colour in the lanes, by its letter ('a' the first zone).
export function zoneColor(letter: string): string {
  const i = letter.charCodeAt(0) - 97;
  return `hsl(${(i * 67) % 360}, 55%, 50%)`;
}

// The zones a lane's letters stand for, for its zone band's title.
export function zoneTitle(zones: string, names: string[]): string {
  const held = [...new Set(zones.replace(/ /g, ''))].map((c) => names[c.charCodeAt(0) - 97] ?? 'more zones');
  return held.length ? `zones: ${held.join(', ')}` : '';
}

// Ticks for a time axis over [from, to) (ns): a round step (1, 2 or 5
// times a power of ten) giving at most `most` ticks.
export function axisTicks(from: number, to: number, most: number): number[] {
  const span = Math.max(1, to - from);
  let step = 1;
  while (span / step > most) {
    const k = String(step)[0];
    step = k === '1' ? step * 2 : k === '2' ? step * 2.5 : step * 2;
  }
  const ticks = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return ticks;
}

// What the timeline says of one lane's column when hovered.
export function columnText(lane: Lane, column: number, from: number, bucket: number,
                           zoneNames: string[]): string[] {
  const lines = [`${lane.name} (${lane.tid})`,
                 `${duration(from + column * bucket)} to ${duration(from + (column + 1) * bucket)}`,
                 `${lane.buckets[column] ?? 0} samples`];
  for (const [state, ns] of Object.entries(lane.off_cpu ?? {})) {
    if (ns[column] > 0) lines.push(`${duration(ns[column])} off CPU, ${state}`);
  }
  const gap = lane.gaps?.[column];
  if (gap && gap !== ' ') lines.push(`gap, not known: ${GAP_CAUSES[gap] ?? gap}`);
  const zone = lane.zones?.[column];
  if (zone && zone !== ' ') lines.push(`zone ${zone === '+' ? '(more zones)' : zoneNames[zone.charCodeAt(0) - 97]}`);
  return lines;
}

export function LanesView(props: {
  lanes: Lanes; selected: string;  // state.time, shown as the selection
  // The range `lanes` was answered for ("FROM..TO", '' for the whole
  // recording): while the answer for a zoom is on its way, the range
  // zoomed into is drawn at once from these columns, coarser.
  dataTime: string;
  thread: string;                  // state.thread: its lane is marked
  zoom: string[];                  // state.zoom: the ranges zoomed into, outermost first
  onSelect: (fromNs: number, toNs: number) => void;
  onClear: () => void;
  onThread: (tid: number) => void;
  onZoom: (zoom: string[]) => void;
}) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [drag, setDrag] = useState<[number, number]|null>(null);
  const [hover, setHover] = useState<{lines: string[]; x: number; y: number}|null>(null);
  const [cursor, setCursor] = useState<{anchor: number; at: number}|null>(null);  // keyboard, in columns
  const [collapsed, setCollapsed] = useState<Set<number>>(new Set());
  const [hidden, setHidden] = useState<Set<string>>(new Set());
  const hide = (key: string) => setHidden(new Set([...hidden, key]));
  const columns = props.lanes.lanes[0]?.buckets.length ?? 0;
  const bucket = props.lanes.bucket_ns;
  // The columns start at the answer's range's start (ns after the
  // recording's start); the canvas shows [origin, origin + span): that
  // range, or a zoom inside it not yet answered (its columns stretched).
  const dataOrigin = selectedRange(props.dataTime, Infinity)?.[0] ?? 0;
  const dataSpan = columns * bucket;
  const wanted = props.zoom.length ? selectedRange(props.zoom[props.zoom.length - 1], Infinity) : null;
  const preview = !!wanted && props.zoom[props.zoom.length - 1] !== props.dataTime &&
      wanted[0] >= dataOrigin && wanted[1] <= dataOrigin + dataSpan + bucket && wanted[1] > wanted[0];
  const origin = preview ? wanted![0] : dataOrigin;
  const span = preview ? wanted![1] - wanted![0] : dataSpan;
  const shown = props.lanes.lanes.slice(0, DRAWN_LANES);
  const laid = laneRows(shown, props.lanes.processes ?? [], collapsed, hidden);
  const zoneNames = props.lanes.zone_names ?? [];
  const tracks = props.lanes.trace_tracks ?? [];
  const common = props.lanes.gaps?.trim() ? props.lanes.gaps : '';
  const rows = laid.length + tracks.length + (common ? 1 : 0);
  // Drawn as the page's changes are laid out, in the same frame (an effect
  // waits for the next one: a zoom was drawn some 30 ms later).
  useLayoutEffect(() => {
    const c = canvas.current!;
    const width = c.clientWidth, height = rows * LANE_HEIGHT;
    c.width = width * devicePixelRatio;
    c.height = height * devicePixelRatio;
    const g = c.getContext('2d')!;
    g.scale(devicePixelRatio, devicePixelRatio);
    g.clearRect(0, 0, width, height);
    const peak = Math.max(1, ...shown.flatMap((l) => l.buckets));
    // Column i at x0 + i * w: the answer's range placed in the one shown.
    const w = (width * bucket) / Math.max(1, span);
    const x0 = ((dataOrigin - origin) * width) / Math.max(1, span);
    g.save();
    g.translate(x0, 0);
    const fg = getComputedStyle(c).color;
    laid.forEach((item, row) => {
      const y = row * LANE_HEIGHT;
      const lane = item.lane;
      if (item.kind === 'process') {
        // All its threads' samples (the server's sum), against its own
        // busiest column.
        const top = Math.max(1, ...lane.buckets);
        fillColumns(g, lane.buckets, PROCESS_COLOR, 0.6, (n, i) => {
          const hgt = Math.max(1, ((LANE_HEIGHT - 4) * n) / top);
          g.rect(i * w, y + LANE_HEIGHT - 2 - hgt, Math.max(1, w - 0.5), hgt);
        });
        return;
      }
      fillColumns(g, lane.buckets, fg, 0.75, (n, i) => {
        const hgt = Math.max(1, ((LANE_HEIGHT - 4) * n) / peak);
        g.rect(i * w, y + LANE_HEIGHT - 2 - hgt, Math.max(1, w - 0.5), hgt);
      });
      for (const [state, ns] of Object.entries(lane.off_cpu ?? {})) {
        fillColumns(g, ns, STATE_COLORS[state] ?? STATE_COLORS.other, 0.6, (v, i) => {
          const hgt = Math.max(1, ((LANE_HEIGHT - 4) * v) / props.lanes.bucket_ns);
          g.rect(i * w, y + 2, Math.max(1, w - 0.5), Math.min(LANE_HEIGHT - 4, hgt));
        });
      }
      // The program's zones: a band at the lane's foot, coloured by zone;
      // its marks and labels as ticks.
      for (let i = 0; i < (lane.zones?.length ?? 0); i++) {
        const z = lane.zones![i];
        if (z !== ' ') {
          g.fillStyle = z === '+' ? '#888888' : zoneColor(z);
          g.fillRect(i * w, y + LANE_HEIGHT - 3, Math.max(1, w), 3);
        }
        if (lane.events && lane.events[i] !== ' ') {
          g.fillStyle = fg;
          g.fillRect(i * w + w / 2 - 0.5, y, 1, 5);
        }
      }
      drawGaps(g, lane.gaps, y, w);
    });
    if (common) drawGaps(g, common, (laid.length + tracks.length) * LANE_HEIGHT, w);
    tracks.forEach((t, k) => {
      const y = (laid.length + k) * LANE_HEIGHT;
      const top = Math.max(0, ...t.counter_max.map((v) => v ?? 0));
      g.fillStyle = IMPORTED_COLOR;
      for (let i = 0; i < t.covered.length; i++) {
        let share = t.covered[i];
        if (!share && t.counter_max[i] != null && top > 0) share = (t.counter_max[i] as number) / top;
        if (share > 0) {
          const hgt = Math.max(1, (LANE_HEIGHT - 4) * Math.min(1, share));
          g.globalAlpha = 0.7;
          g.fillRect(i * w, y + LANE_HEIGHT - 2 - hgt, Math.max(1, w - 0.5), hgt);
        }
        if (t.instant_counts[i] > 0) {
          g.globalAlpha = 1;
          g.fillRect(i * w + w / 2 - 0.5, y + 1, 1, LANE_HEIGHT - 2);
        }
      }
      g.globalAlpha = 1;
    });
    g.restore();
    // Each drawing (bench/serve_view reads them), saying whether it
    // stretched an answer for another range.
    performance.mark('microscope:lanes-drawn', {detail: {preview}});
  }, [props.lanes, collapsed, hidden, origin, span]);
  // Nanoseconds after the recording's start at x (pixels from the canvas's left).
  const at = (x: number) =>
      origin + (span * Math.max(0, Math.min(x, canvas.current!.clientWidth))) / canvas.current!.clientWidth;
  const x = (e: PointerEvent) => e.clientX - canvas.current!.getBoundingClientRect().left;
  const chosen = selectedRange(props.selected, origin + span);
  const fromCursor: [number, number]|null = cursor &&
      [dataOrigin + Math.min(cursor.anchor, cursor.at) * bucket,
       dataOrigin + (Math.max(cursor.anchor, cursor.at) + 1) * bucket];
  const sel = drag ?? fromCursor ?? chosen;
  const hoverAt = (e: PointerEvent) => {
    const r = canvas.current!.getBoundingClientRect();
    const column = Math.floor((at(e.clientX - r.left) - dataOrigin) / bucket);
    const row = Math.floor((e.clientY - r.top) / LANE_HEIGHT);
    const item = laid[row];
    if (!item || column < 0 || column >= columns) return setHover(null);
    const lines = columnText(item.lane, column, dataOrigin, bucket, zoneNames);
    if (item.kind === 'process') lines[0] = `${item.name} (process ${item.pid}), ${item.threads} threads`;
    setHover({
      lines,
      x: e.clientX - r.left,
      y: e.clientY - r.top,
    });
  };
  // Arrows move a cursor by a column, Shift+arrows widen the selection
  // from where it began; Enter selects it, + zooms into it, - zooms out,
  // Escape drops it.
  const onKey = (e: KeyboardEvent) => {
    const step = (d: number) => {
      const at = Math.max(0, Math.min(columns - 1, (cursor?.at ?? -d) + d));
      setCursor({anchor: e.shiftKey && cursor ? cursor.anchor : at, at});
      e.preventDefault();
    };
    if (e.key === 'ArrowRight') step(1);
    else if (e.key === 'ArrowLeft') step(-1);
    else if (e.key === 'Enter' && fromCursor) {
      props.onSelect(fromCursor[0], fromCursor[1]);
      setCursor(null);
    } else if ((e.key === '+' || e.key === '=') && (fromCursor || chosen)) {
      const [a, b] = (fromCursor ?? chosen)!;
      props.onZoom([...props.zoom, timeRange(a, b)]);
      setCursor(null);
    } else if (e.key === '-' && props.zoom.length) {
      props.onZoom(props.zoom.slice(0, -1));
    } else if (e.key === 'Escape') {
      setCursor(null);
    }
  };
  const ticks = axisTicks(origin, origin + span, 8);
  const legend = [...new Set(shown.flatMap((l) => Object.keys(l.off_cpu ?? {})))];
  return h(
      'section',
      {class: 'lanes', 'aria-label': 'timeline'},
      h(
          'div',
          {class: 'lane-names', style: {width: `${LABEL_WIDTH}px`}},
          laid.map(
              (item) => item.kind === 'process' ?
                  h('div', {style: {height: `${LANE_HEIGHT}px`}, class: 'process-row'},
                    h('button', {
                      class: 'lane-name process-name',
                      'aria-expanded': !item.collapsed,
                      title: `process ${item.pid}: its threads' samples together, ${item.threads} ` +
                          'threads drawn; click to ' +
                          (item.collapsed ? 'show them' : 'fold them into this row'),
                      onClick: () => {
                        const next = new Set(collapsed);
                        if (next.has(item.pid)) next.delete(item.pid); else next.add(item.pid);
                        setCollapsed(next);
                      },
                    },
                      `${item.collapsed ? '▸' : '▾'} ${item.name} (${item.pid})`),
                    h('button', {
                      class: 'hide-track',
                      'aria-label': `hide process ${item.name} (${item.pid})`,
                      title: 'hide this process and its threads',
                      onClick: () => hide(trackKey('process', item.pid)),
                    }, '×')) :
              h('div', {
                style: {height: `${LANE_HEIGHT}px`},
                class: laid[0].kind === 'process' ? 'in-process' : undefined,
                title: [`tid ${item.lane.tid}: click to show this thread only`, gapTitle(item.lane.gaps ?? ''),
                        zoneTitle(item.lane.zones ?? '', zoneNames)]
                           .filter(Boolean)
                           .join('; '),
              },
                       h('button', {
                         class: 'lane-name',
                         'aria-pressed': props.thread === String(item.lane.tid),
                         onClick: () => props.onThread(item.lane.tid),
                       },
                         `${item.lane.name} (${item.lane.tid})`),
                       h('button', {
                         class: 'hide-track',
                         'aria-label': `hide thread ${item.lane.name} (${item.lane.tid})`,
                         title: 'hide this thread\'s track',
                         onClick: () => hide(trackKey('thread', item.lane.tid)),
                       }, '×'))),
          tracks.map(
              (t) => h(
                  'div',
                  {class: 'imported', style: {height: `${LANE_HEIGHT}px`}, title: trackTitle(t)},
                  `⇢ ${t.name}`)),
          common &&
              h('div', {class: 'gaps', style: {height: `${LANE_HEIGHT}px`}, title: gapTitle(common)},
                'gaps (every process)'),
          ),
      h(
          'div',
          {class: 'lane-area'},
          h('canvas', {
            ref: canvas,
            tabIndex: 0,
            style: {height: `${rows * LANE_HEIGHT}px`},
            'aria-label': 'threads over time: drag (or arrows, Shift+arrows, Enter) to select a ' +
                'time range; + zooms into it, - zooms out',
            onKeyDown: onKey,
            onPointerDown: (e: PointerEvent) => {
              (e.target as Element).setPointerCapture(e.pointerId);
              setDrag([at(x(e)), at(x(e))]);
            },
            onPointerMove: (e: PointerEvent) => {
              if (drag) setDrag([drag[0], at(x(e))]);
              hoverAt(e);
            },
            onPointerLeave: () => setHover(null),
            onPointerUp: (e: PointerEvent) => {
              if (!drag) return;
              const end = at(x(e));
              setDrag(null);
              if (Math.abs(end - drag[0]) > span / 500) props.onSelect(drag[0], end);
            },
          }),
          sel && h('div', {
            class: 'selection',
            style: {
              left: `${(100 * (Math.min(sel[0], sel[1]) - origin)) / span}%`,
              width: `${(100 * Math.abs(sel[1] - sel[0])) / span}%`,
            },
          }),
          hover && h('div', {
            class: 'tooltip',
            role: 'tooltip',
            style: {left: `${Math.min(hover.x + 12, (canvas.current?.clientWidth ?? 0) - 200)}px`, top: `${hover.y + 12}px`},
          },
            hover.lines.map((l, i) => (i === 0 ? h('strong', null, l) : h('div', null, l)))),
          h('div', {class: 'axis', 'aria-label': 'time axis'},
            ticks.map((t) => h('span', {class: 'tick', style: {left: `${(100 * (t - origin)) / span}%`}},
                               duration(t)))),
          ),
      h('nav', {class: 'zoom', 'aria-label': 'timeline zoom'},
        h('button', {
          disabled: !chosen && !fromCursor,
          title: 'zoom into the selected range (+)',
          onClick: () => {
            const [a, b] = (fromCursor ?? chosen)!;
            props.onZoom([...props.zoom, timeRange(a, b)]);
          },
        }, 'zoom in'),
        ['', ...props.zoom].map((z, i) => h('button', {
          'aria-current': i === props.zoom.length ? 'true' : undefined,
          onClick: () => props.onZoom(props.zoom.slice(0, i)),
        }, i === 0 ? 'all' : z)),
        props.selected &&
            h('button', {class: 'clear-time', onClick: props.onClear}, `time ${props.selected} ×`),
        hidden.size > 0 &&
            h('button', {class: 'show-hidden', title: 'show the tracks hidden with ×',
                         onClick: () => setHidden(new Set())},
              `show ${hidden.size} hidden ${hidden.size === 1 ? 'track' : 'tracks'}`),
        legend.length > 0 && h('span', {class: 'state-legend', 'aria-label': 'off-CPU states'},
          legend.map((st) => h('span', {class: 'zone-key'},
                               h('i', {style: {background: STATE_COLORS[st] ?? STATE_COLORS.other}}),
                               `off CPU, ${st}`)))),
      props.lanes.lanes.length > shown.length &&
          h('p', {class: 'more-lanes'},
            `${shown.length} of ${props.lanes.lanes.length} threads drawn, the busiest; ` +
                'the thread picker reaches every one'),
      zoneNames.length > 0 &&
          h('p', {class: 'zone-legend', 'aria-label': 'zones'},
            zoneNames.map((n, i) => h('span', {class: 'zone-key'},
                                      h('i', {style: {background: zoneColor(String.fromCharCode(97 + i))}}),
                                      n))),
      (props.lanes.own_axis_traces ?? []).map(
          (path) => h('p', {class: 'own-axis'},
                      `${path}: on its own axis, not drawn against this recording's time ` +
                          `(import it with --anchor, --offset or --clock to place it)`)),
  );
}

// The range "FROM..TO" (seconds, as state.time holds it) in nanoseconds.
export function selectedRange(time: string, span: number): [number, number]|null {
  const m = /^([\d.]*)s?\.\.([\d.]*)s?$/.exec(time);
  if (!time || !m) return null;
  const from = m[1] ? parseFloat(m[1]) * 1e9 : 0;
  const to = m[2] ? parseFloat(m[2]) * 1e9 : span;
  return [from, to];
}
