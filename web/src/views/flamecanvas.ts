// The flame graph, drawn on a canvas: the model of views/flamemodel.ts,
// one fillRect and at most one label per frame (an SVG graph's element
// per frame made its layout and paint most of the page's first paint). A click
// zooms in the page; keys as there (arrows, Enter, F, S, Escape); the
// frame under the pointer is named in a tooltip, the current one in a
// status line for screen readers.
import {h} from 'preact';
import {useLayoutEffect, useMemo, useRef, useState} from 'preact/hooks';
import {DiffRow, flameRoot, Report} from '../api';
import {useWidth} from './common';
import {diffColor, kindColor, KindLegend, kindsOf, PRUNED_COLOR} from './flame';
import {Drawn, drawnFrames, Frame, frameAt, layoutFlame, moveFrom, pathOf, searchFrames} from './flamemodel';

const ROW = 18;
const MIN_PX = 3;
const LABEL_PX = 35;
const MATCH_COLOR = '#E600E6';

const focusable = (f: Frame) => f.parent !== null && !f.node.pruned;

// What the graph drew last: its exports (SVG, PNG) are of it, and the
// browser tests and the bench read its frames (window.microscopeFlame).
interface Shown {
  drawn: Drawn[];
  colors: string[];
  width: number;
  height: number;
  canvas: HTMLCanvasElement;
  current: Frame|null;
}
let last: Shown|null = null;

// The frames drawn: name, box (CSS pixels in the canvas), colour, and
// whether it is the keyboard's current frame.
export function drawnList() {
  return (last?.drawn ?? []).map((d, i) => ({
    name: d.frame.node.name, x: d.x, y: d.y, w: d.w, h: ROW, fill: last!.colors[i],
    current: d.frame === last!.current, depth: d.frame.depth, path: pathOf(d.frame),
  }));
}
(globalThis as unknown as {microscopeFlame: typeof drawnList}).microscopeFlame = drawnList;

function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// The graph as drawn, as an SVG file: a rect per frame and its label as
// text, cut at the frame's width.
export function flameSvgText(): string {
  const s = last;
  if (!s) return '';
  const parts = s.drawn.map((d, i) => {
    const rect = `<rect x="${d.x.toFixed(1)}" y="${d.y}" width="${Math.max(1, d.w - 1).toFixed(1)}" height="${ROW - 1}" ` +
        `fill="${s.colors[i]}"><title>${escapeXml(d.frame.node.name + ': ' + d.frame.node.text)}</title></rect>`;
    if (d.w < LABEL_PX) return rect;
    return rect + `<svg x="${d.x.toFixed(1)}" y="${d.y}" width="${(d.w - 4).toFixed(1)}" height="${ROW}">` +
        `<text x="3" y="13">${escapeXml(d.frame.node.name)}</text></svg>`;
  });
  return '<?xml version="1.0" encoding="UTF-8"?>\n' +
      `<svg xmlns="http://www.w3.org/2000/svg" width="${s.width}" height="${s.height}">` +
      '<style>text { font: 12px sans-serif; fill: #000; }</style>' + parts.join('') + '</svg>';
}

// The graph as drawn, as a PNG image (the canvas, on a white ground).
export async function flamePngBlob(): Promise<Blob> {
  const s = last;
  if (!s) throw new Error('no flame graph is drawn');
  const copy = document.createElement('canvas');
  copy.width = s.canvas.width;
  copy.height = s.canvas.height;
  const g = copy.getContext('2d')!;
  g.fillStyle = '#ffffff';
  g.fillRect(0, 0, copy.width, copy.height);
  g.drawImage(s.canvas, 0, 0);
  return await new Promise<Blob>((done, fail) =>
    copy.toBlob((b) => (b ? done(b) : fail(new Error('the PNG could not be made'))), 'image/png'));
}

function frameColor(f: Frame, diff: Map<string, DiffRow>|null): string {
  if (f.node.pruned) return PRUNED_COLOR;
  if (!f.parent) return 'hsl(0, 0%, 75%)';
  if (!diff) return kindColor(f.node.kind, f.node.name);
  return diffColor(diff.get(f.node.name)?.delta) ?? 'hsl(0, 0%, 82%)';
}

export function CanvasFlameGraph(props: {
  report: Report; search: string; searchShare: string; diff: Map<string, DiffRow>|null;
  onFocus: (name: string) => void;
  onSubtree?: (fromRoot: string[]) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const canvas = useRef<HTMLCanvasElement>(null);
  const measured = useWidth(host);
  const width = Math.max(320, measured);
  const frames = useMemo(() => layoutFlame(flameRoot(props.report)), [props.report]);
  const [zoomed, setZoomed] = useState<Frame|null>(null);
  const [current, setCurrent] = useState<Frame|null>(null);
  const [hover, setHover] = useState<{d: Drawn; x: number; y: number}|null>(null);
  const shown = zoomed && frames.includes(zoomed) ? zoomed : null;
  const drawn = useMemo(() => drawnFrames(frames, shown, width, MIN_PX, ROW), [frames, shown, width]);
  const matched = useMemo(() => searchFrames(frames, props.search), [frames, props.search]);
  const depth = drawn.reduce((m, d) => Math.max(m, d.frame.depth), 0);
  const height = (depth + 2) * ROW;
  useLayoutEffect(() => {
    if (!measured) return;  // drawn once its width is known (before the first paint)
    const c = canvas.current!;
    c.width = width * devicePixelRatio;
    c.height = height * devicePixelRatio;
    const g = c.getContext('2d')!;
    g.scale(devicePixelRatio, devicePixelRatio);
    g.clearRect(0, 0, width, height);
    g.font = '12px sans-serif';
    g.textBaseline = 'middle';
    const colors = drawn.map((d) => (matched.has(d.frame) ? MATCH_COLOR : frameColor(d.frame, props.diff)));
    drawn.forEach((d, i) => {
      g.fillStyle = colors[i];
      g.fillRect(d.x, d.y, Math.max(1, d.w - 1), ROW - 1);
      if (d.w >= LABEL_PX) {
        g.save();
        g.beginPath();
        g.rect(d.x, d.y, d.w - 4, ROW);
        g.clip();
        g.fillStyle = '#000000';
        g.fillText(d.frame.node.name, d.x + 3, d.y + ROW / 2);
        g.restore();
      }
      if (d.frame === current) {
        g.strokeStyle = '#000000';
        g.lineWidth = 2;
        g.strokeRect(d.x + 1, d.y + 1, Math.max(1, d.w - 3), ROW - 3);
      }
    });
    last = {drawn, colors, width, height, canvas: c, current};
    if (!performance.getEntriesByName('microscope:flame').length) performance.mark('microscope:flame');
    performance.mark('microscope:flame-drawn');
  }, [drawn, matched, current, props.diff, width, height, measured]);
  const at = (e: MouseEvent) => {
    const r = canvas.current!.getBoundingClientRect();
    return frameAt(drawn, e.clientX - r.left, e.clientY - r.top, ROW);
  };
  const zoomTo = (f: Frame|null) => {
    setZoomed(f && f.parent ? f : null);
    setCurrent(f);
  };
  const onKey = (e: KeyboardEvent) => {
    const from = current ?? drawn[0]?.frame;
    if (!from) return;
    const key = e.key;
    if (key.startsWith('Arrow')) {
      const to = moveFrom(drawn, from, key);
      if (to) setCurrent(to);
    } else if (key === 'Enter' || key === ' ') {
      zoomTo(from);
    } else if ((key === 'f' || key === 'F') && focusable(from)) {
      props.onFocus(from.node.name);
    } else if ((key === 's' || key === 'S') && focusable(from) && props.onSubtree) {
      props.onSubtree(pathOf(from));
    } else if (key === 'Escape') {
      zoomTo(null);
    } else {
      return;
    }
    e.preventDefault();
    e.stopPropagation();
  };
  const label = (f: Frame) => `${f.node.name}${f.node.module ? ' [' + f.node.module + ']' : ''}: ${f.node.text}`;
  return h(
      'div',
      null,
      props.search &&
          h('p', {class: 'matched', role: 'status'},
            matched.size ? `${matched.size} frames match; ${props.searchShare}` : 'no frame matches'),
      shown &&
          h('p', {class: 'zoomed', role: 'status'},
            `zoomed into ${shown.node.name} (${shown.node.text}), in the page `,
            focusable(shown) &&
                h('button', {onClick: () => props.onFocus(shown.node.name)}, 'focus every view on it (F)'),
            ' ',
            focusable(shown) && props.onSubtree &&
                h('button', {onClick: () => props.onSubtree?.(pathOf(shown))}, 'focus on this subtree only (S)'),
            ' ',
            h('button', {onClick: () => zoomTo(null)}, 'zoom out (Escape)')),
      h('div', {class: 'flame flame-canvas', ref: host, 'data-width': width},
        h('canvas', {
          ref: canvas,
          tabIndex: 0,
          style: {width: `${width}px`, height: `${height}px`},
          'aria-label': 'flame graph: arrows move between frames, Enter zooms, F focuses, S keeps the subtree, ' +
              'Escape zooms out',
          onKeyDown: onKey,
          // The keyboard starts at the whole.
          onFocus: () => current || setCurrent(drawn[0]?.frame ?? null),
          onClick: (e: MouseEvent) => {
            const d = at(e);
            if (d) zoomTo(d.frame);
          },
          onMouseMove: (e: MouseEvent) => {
            const d = at(e);
            const r = canvas.current!.getBoundingClientRect();
            setHover(d ? {d, x: e.clientX - r.left, y: e.clientY - r.top} : null);
          },
          onMouseLeave: () => setHover(null),
        }),
        hover && h('div', {class: 'tooltip', role: 'tooltip', style: {left: `${Math.min(hover.x + 12, width - 240)}px`,
                                                                        top: `${hover.y + 12}px`}},
                   label(hover.d.frame)),
        h('p', {class: 'visually-hidden', 'aria-live': 'polite'}, current ? label(current) : '')),
      !props.diff && h(KindLegend, {kinds: kindsOf(props.report)}),
  );
}
