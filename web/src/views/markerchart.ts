// The marker chart (the Firefox Profiler's): each thread's markers drawn
// where they happened, one row per kind, per zone depth, per label and per
// counter, on the same time window as the timeline above: zones nested by
// depth and coloured by name, time off CPU by state, system calls, label
// spans, marks as ticks, counters as a graph of their values, gaps hatched.
// Hovering says what a marker is; a click selects its time range.
import {h} from 'preact';
import {useEffect, useMemo, useRef, useState} from 'preact/hooks';
import type {MarkerRow} from '../api';
import {duration, textHash, useWidth} from './common';
import {GAP_COLOR, LABEL_WIDTH, STATE_COLORS} from './lanes';

export const CHART_ROW = 14;
// The most rows drawn; the table below lists every marker.
export const MAX_CHART_ROWS = 400;

// The order of kinds within a thread, top first.
const KIND_ORDER = ['zone', 'label', 'mark', 'counter', 'off-cpu', 'syscall', 'gap'];

export interface ChartRow {
  tid: number;
  kind: string;
  title: string;  // what the row's label says
  markers: MarkerRow[];
  // A counter's values, parsed from its markers' detail, and their range.
  values?: number[];
  low?: number;
  high?: number;
}

// The chart's rows: by thread (every thread's own, tid 0, last), then by
// kind; zones one row per depth, labels and counters one row per name.
export function chartRows(rows: MarkerRow[]): ChartRow[] {
  const byKey = new Map<string, ChartRow>();
  for (const r of rows) {
    const [kind, tid, , , depth, name] = r;
    const lane = kind === 'zone' ? `depth ${depth}` : kind === 'label' || kind === 'counter' ? name : '';
    const key = `${tid}\0${kind}\0${lane}`;
    let row = byKey.get(key);
    if (!row) {
      const title = kind === 'zone' ? (depth ? `zones, depth ${depth}` : 'zones') :
          kind === 'label' ? `label ${name}` :
          kind === 'counter' ? `counter ${name}` :
          kind === 'off-cpu' ? 'off CPU' : kind === 'syscall' ? 'system calls' : kind === 'mark' ? 'marks' : 'gaps';
      row = {tid, kind, title, markers: []};
      byKey.set(key, row);
    }
    row.markers.push(r);
  }
  const out = [...byKey.values()];
  for (const row of out) {
    row.markers.sort((a, b) => a[2] - b[2]);
    if (row.kind === 'counter') {
      row.values = row.markers.map((m) => parseFloat(m[6]));
      const finite = row.values.filter(Number.isFinite);
      row.low = Math.min(0, ...finite);
      row.high = Math.max(row.low, ...finite);
    }
  }
  const depthOf = (r: ChartRow) => (r.kind === 'zone' ? r.markers[0][4] : 0);
  out.sort((a, b) => (a.tid === 0 ? 1 : 0) - (b.tid === 0 ? 1 : 0) || a.tid - b.tid ||
               KIND_ORDER.indexOf(a.kind) - KIND_ORDER.indexOf(b.kind) || depthOf(a) - depthOf(b) ||
               a.title.localeCompare(b.title));
  return out;
}

// A name's colour: the same name, the same colour, across rows and reloads.
export function nameColor(name: string): string {
  return `hsl(${textHash(name) % 360}, 50%, 55%)`;
}

// A marker's colour by kind (off CPU by its state, the detail's first word).
export function markerColor(m: MarkerRow): string {
  switch (m[0]) {
    case 'zone':
      return nameColor(m[5]);
    case 'label':
      return nameColor(`${m[5]}=${m[6]}`);
    case 'off-cpu':
      return STATE_COLORS[m[6].split(/[ ,]/)[0]] ?? STATE_COLORS.other;
    case 'syscall':
      return '#5b8cc4';
    case 'gap':
      return GAP_COLOR;
    default:
      return '#666666';
  }
}

// The marker of `row` under time `t` (ns): the shortest covering it, else
// the nearest within `slack` ns of it (an instant, a marker a pixel wide).
export function markerAt(row: ChartRow, t: number, slack: number): MarkerRow|null {
  let covering: MarkerRow|null = null, near: MarkerRow|null = null, nearest = Infinity;
  for (const m of row.markers) {
    if (m[2] - slack > t) break;
    if (t > m[3] + slack) continue;
    if (m[2] <= t && t <= m[3]) {
      if (!covering || m[3] - m[2] < covering[3] - covering[2]) covering = m;
    } else {
      const off = Math.min(Math.abs(t - m[2]), Math.abs(t - m[3]));
      if (off < nearest) [near, nearest] = [m, off];
    }
  }
  return covering ?? near;
}

// What a marker says when hovered.
export function markerText(m: MarkerRow, thread: string): string[] {
  const lines = [`${m[5]}`, `${m[0]} on ${thread}`, `at ${duration(m[2])}`];
  if (m[3] > m[2]) lines.push(`for ${duration(m[3] - m[2])}`);
  if (m[6]) lines.push(m[0] === 'counter' ? `value ${m[6]}` : m[6]);
  return lines;
}

export function MarkerChart(props: {
  rows: MarkerRow[];  // those the table keeps (its search and kinds)
  threads: Map<number, string>;
  window: [number, number];  // ns after the start: the timeline's range
  onSelect: (fromNs: number, toNs: number) => void;
}) {
  const box = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const width = useWidth(box);
  const [hover, setHover] = useState<{lines: string[]; x: number; y: number}|null>(null);
  const all = useMemo(() => chartRows(props.rows), [props.rows]);
  const rows = all.slice(0, MAX_CHART_ROWS);
  const [from, to] = props.window;
  const span = Math.max(1, to - from);
  const thread = (tid: number) => (tid ? `${props.threads.get(tid) ?? 'thread'} (${tid})` : 'every thread');
  useEffect(() => {
    const c = canvas.current!;
    const w = c.clientWidth, height = rows.length * CHART_ROW;
    if (w === 0) return;
    c.width = w * devicePixelRatio;
    c.height = height * devicePixelRatio;
    const g = c.getContext('2d')!;
    g.scale(devicePixelRatio, devicePixelRatio);
    g.clearRect(0, 0, w, height);
    const x = (t: number) => ((t - from) * w) / span;
    const fg = getComputedStyle(c).color;
    rows.forEach((row, i) => {
      const y = i * CHART_ROW;
      if (i > 0 && row.tid !== rows[i - 1].tid) {
        g.fillStyle = fg;
        g.globalAlpha = 0.3;
        g.fillRect(0, y, w, 1);
        g.globalAlpha = 1;
      }
      if (row.kind === 'counter') {
        // A step graph of the values, from the low to the high.
        const range = Math.max(1e-12, row.high! - row.low!);
        g.strokeStyle = nameColor(row.title);
        g.beginPath();
        row.markers.forEach((m, k) => {
          const v = row.values![k];
          if (!Number.isFinite(v)) return;
          const py = y + CHART_ROW - 2 - ((CHART_ROW - 4) * (v - row.low!)) / range;
          if (k === 0) g.moveTo(x(m[2]), py);
          else g.lineTo(x(m[2]), py);
          const next = row.markers[k + 1];
          g.lineTo(next ? x(next[2]) : w, py);
        });
        g.stroke();
        return;
      }
      for (const m of row.markers) {
        if (m[3] < from || m[2] > to) continue;
        const left = x(m[2]);
        g.fillStyle = markerColor(m);
        if (m[3] === m[2]) {
          g.fillRect(left - 0.5, y + 1, 1.5, CHART_ROW - 2);  // an instant
          continue;
        }
        const right = x(m[3]);
        g.globalAlpha = m[0] === 'gap' ? 0.5 : 0.85;
        g.fillRect(left, y + 1, Math.max(1, right - left), CHART_ROW - 2);
        g.globalAlpha = 1;
        // The name, where the bar has room for it.
        if (right - left > 40 && (m[0] === 'zone' || m[0] === 'label' || m[0] === 'syscall')) {
          g.save();
          g.beginPath();
          g.rect(Math.max(0, left), y, Math.min(w, right) - Math.max(0, left), CHART_ROW);
          g.clip();
          g.fillStyle = '#000000';
          g.font = '10px sans-serif';
          g.fillText(m[0] === 'label' ? m[6] : m[5], Math.max(0, left) + 2, y + CHART_ROW - 3);
          g.restore();
        }
      }
    });
  }, [rows, from, to, width]);
  const pick = (e: PointerEvent): MarkerRow|null => {
    const r = canvas.current!.getBoundingClientRect();
    const row = rows[Math.floor((e.clientY - r.top) / CHART_ROW)];
    if (!row || r.width === 0) return null;
    const t = from + ((e.clientX - r.left) * span) / r.width;
    return markerAt(row, t, (3 * span) / r.width);
  };
  return h(
      'div',
      {class: 'marker-chart', ref: box},
      all.length > rows.length &&
          h('p', {class: 'hint'}, `${rows.length} of ${all.length} rows drawn; the table lists every marker`),
      h('div', {class: 'chart-rows'},
        h('div', {class: 'lane-names', style: {width: `${LABEL_WIDTH}px`}},
          rows.map((row, i) => h('div', {
                                   class: 'chart-label',
                                   style: {height: `${CHART_ROW}px`, lineHeight: `${CHART_ROW}px`},
                                   title: `${thread(row.tid)}: ${row.title} (${row.markers.length})`,
                                 },
                                 i === 0 || rows[i - 1].tid !== row.tid ? `${thread(row.tid)} · ${row.title}` :
                                                                          row.title))),
        h('div', {class: 'lane-area'},
          h('canvas', {
            ref: canvas,
            role: 'img',
            'aria-label': `marker chart: ${rows.length} rows over ${duration(span)}; click a marker to select its range`,
            style: {height: `${rows.length * CHART_ROW}px`},
            onPointerMove: (e: PointerEvent) => {
              const m = pick(e);
              setHover(m ? {lines: markerText(m, thread(m[1])), x: e.clientX, y: e.clientY} : null);
            },
            onPointerLeave: () => setHover(null),
            onClick: (e: PointerEvent) => {
              const m = pick(e);
              if (m) props.onSelect(m[2], Math.max(m[3], m[2] + 1));
            },
          }),
          hover && h('div', {
            class: 'tooltip',
            role: 'tooltip',
            // Fixed: the rows scroll, and would clip it.
            style: {position: 'fixed', left: `${Math.min(hover.x + 12, innerWidth - 260)}px`, top: `${hover.y + 12}px`},
          },
            hover.lines.map((l, i) => (i === 0 ? h('strong', null, l) : h('div', null, l)))))));
}
