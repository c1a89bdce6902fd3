// The stack chart: the chosen thread's samples in time order (the busiest
// thread the filters keep when none is chosen), each frame a box as long
// as it stayed on the stack, callers on top. Drag to zoom into a range
// (the page zooms what it has: no round trip), the breadcrumb or Escape to
// zoom out; hover for the frame's time, samples and place; a click focuses
// every view on the function. Unzoomed, its time axis is the timeline's,
// under it.
import {h} from 'preact';
import {useEffect, useMemo, useRef, useState} from 'preact/hooks';
import type {StackChart} from '../api';
import {duration, textHash, useWidth} from './common';

export const ROW_HEIGHT = 16;

export interface ChartBox {
  depth: number;
  name: number;  // into chart.names
  start: number;  // ns after the recording's start
  end: number;
  samples: number;
}

// The boxes of `chart`: at each depth, a frame continues while the runs
// that follow each other without a gap keep it under the same callers.
export function chartBoxes(chart: StackChart): ChartBox[] {
  const boxes: ChartBox[] = [];
  const open: ChartBox[] = [];  // the box at each depth of the last run
  let lastEnd = -1;
  for (const [start, end, stackIndex, samples] of chart.runs) {
    const stack = chart.stacks[stackIndex];
    let same = start <= lastEnd;  // touching the run before: boxes may go on
    for (let d = 0; d < stack.length; d++) {
      if (same && open[d] && open[d].name === stack[d]) {
        open[d].end = end;
        open[d].samples += samples;
      } else {
        same = false;
        open[d] = {depth: d, name: stack[d], start, end, samples};
        boxes.push(open[d]);
      }
    }
    open.length = stack.length;
    lastEnd = end;
  }
  return boxes;
}

// A frame's colour from its module, so that one library keeps one hue.
function moduleColor(module: string): string {
  return `hsl(${textHash(module) % 360}, 60%, 62%)`;
}

export function StackChartView(props: {
  chart: StackChart; onFocus: (name: string) => void;
  // The timeline's range (ns after the start: the selection, the zoom or
  // the whole recording): unzoomed, the chart lines up with it.
  window?: [number, number];
}) {
  const {chart} = props;
  const canvas = useRef<HTMLCanvasElement>(null);
  const boxes = useMemo(() => chartBoxes(chart), [chart]);
  const whole = useMemo((): [number, number] => {
    if (props.window && props.window[1] > props.window[0]) return props.window;
    if (!chart.runs.length) return [0, 1];
    return [chart.runs[0][0], Math.max(...chart.runs.map((r) => r[1]))];
  }, [chart, props.window?.[0], props.window?.[1]]);
  const [zooms, setZooms] = useState<[number, number][]>([]);  // the breadcrumb, outermost first
  const [drag, setDrag] = useState<[number, number]|null>(null);
  const [hover, setHover] = useState<{box: ChartBox; x: number; y: number}|null>(null);
  const width = useWidth(canvas);
  const [from, to] = zooms.length ? zooms[zooms.length - 1] : whole;
  const depth = boxes.reduce((m, b) => Math.max(m, b.depth + 1), 0);
  useEffect(() => setZooms([]), [chart]);
  useEffect(() => {
    const c = canvas.current!;
    if (!width) return;
    const height = depth * ROW_HEIGHT;
    c.width = width * devicePixelRatio;
    c.height = Math.max(1, height * devicePixelRatio);
    const g = c.getContext('2d')!;
    g.scale(devicePixelRatio, devicePixelRatio);
    g.clearRect(0, 0, width, height);
    g.font = '11px system-ui, sans-serif';
    g.textBaseline = 'middle';
    const scale = width / Math.max(1, to - from);
    let drawn = 0;
    for (const b of boxes) {
      if (b.end <= from || b.start >= to) continue;
      const x = Math.max(0, (b.start - from) * scale);
      const w = Math.min(width, (b.end - from) * scale) - x;
      if (w < 0.5) continue;
      const y = b.depth * ROW_HEIGHT;
      g.fillStyle = moduleColor(chart.modules[b.name]);
      g.fillRect(x, y, Math.max(0.5, w - 0.5), ROW_HEIGHT - 1);
      drawn++;
      if (w > 30) {
        g.fillStyle = '#000';
        g.save();
        g.beginPath();
        g.rect(x, y, w - 2, ROW_HEIGHT);
        g.clip();
        g.fillText(chart.names[b.name], x + 3, y + ROW_HEIGHT / 2);
        g.restore();
      }
    }
    c.dataset.boxes = String(drawn);
  }, [boxes, from, to, width, depth]);
  const at = (clientX: number) => {
    const r = canvas.current!.getBoundingClientRect();
    return from + ((to - from) * Math.max(0, Math.min(clientX - r.left, r.width))) / r.width;
  };
  const boxAt = (e: PointerEvent) => {
    const r = canvas.current!.getBoundingClientRect();
    const t = at(e.clientX), d = Math.floor((e.clientY - r.top) / ROW_HEIGHT);
    return boxes.find((b) => b.depth === d && b.start <= t && t < b.end) ?? null;
  };
  const zoomOut = () => setZooms(zooms.slice(0, -1));
  const sel = drag && [Math.min(drag[0], drag[1]), Math.max(drag[0], drag[1])];
  return h(
      'section',
      {
        class: 'stack-chart',
        'aria-label': 'stack chart',
        tabIndex: 0,
        onKeyDown: (e: KeyboardEvent) => {
          if (e.key === 'Escape' && zooms.length) zoomOut();
          // + and -: zoom on the middle by half, out to the level before.
          if (e.key === '+' || e.key === '=') {
            const q = (to - from) / 4;
            setZooms([...zooms, [from + q, to - q]]);
          }
          if (e.key === '-' && zooms.length) zoomOut();
        },
      },
      h('p', {class: 'hint'},
        `${chart.thread} (${chart.tid}): ${chart.samples} samples in time order`,
        chart.threads > 1 && ` (the busiest of ${chart.threads} threads: choose another with the thread picker)`,
        chart.truncated && `; only the first ${chart.runs.length} runs: select a shorter range on the timeline`,
        '. Drag to zoom; Escape or the breadcrumb to zoom out.'),
      h('nav', {class: 'breadcrumb', 'aria-label': 'zoom levels'},
        [whole, ...zooms].map(
            ([a, b], i) => h('button', {
              'aria-current': i === zooms.length ? 'true' : undefined,
              onClick: () => setZooms(zooms.slice(0, i)),
            },
                             i === 0 ? `all ${duration(b - a)}` : duration(b - a)))),
      h('div', {class: 'chart-area'},
        h('canvas', {
          ref: canvas,
          style: {height: `${depth * ROW_HEIGHT}px`},
          'data-from': from,
          'data-to': to,
          onPointerDown: (e: PointerEvent) => {
            (e.target as Element).setPointerCapture(e.pointerId);
            setDrag([at(e.clientX), at(e.clientX)]);
          },
          onPointerMove: (e: PointerEvent) => {
            if (drag) setDrag([drag[0], at(e.clientX)]);
            const box = boxAt(e);
            setHover(box ? {box, x: e.offsetX, y: e.offsetY} : null);
          },
          onPointerLeave: () => setHover(null),
          onPointerUp: (e: PointerEvent) => {
            if (!drag) return;
            const end = at(e.clientX);
            setDrag(null);
            if (Math.abs(end - drag[0]) > (to - from) / 200) {
              setZooms([...zooms, [Math.min(drag[0], end), Math.max(drag[0], end)]]);
            } else {
              const box = boxAt(e);
              if (box) props.onFocus(chart.names[box.name]);
            }
          },
        }),
        sel && h('div', {
          class: 'selection',
          style: {
            left: `${(100 * (sel[0] - from)) / (to - from)}%`,
            width: `${(100 * (sel[1] - sel[0])) / (to - from)}%`,
          },
        }),
        hover && h('div', {
          class: 'tooltip',
          role: 'tooltip',
          style: {left: `${hover.x + 12}px`, top: `${hover.y + 12}px`},
        },
          h('strong', null, chart.names[hover.box.name]),
          chart.modules[hover.box.name] && h('span', {class: 'module'}, ` [${chart.modules[hover.box.name]}]`),
          h('br', null),
          `${duration(hover.box.end - hover.box.start)} on the stack, ${hover.box.samples} samples, from ${
              duration(hover.box.start)}`)));
}
