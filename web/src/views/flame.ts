// The flame graph, drawn by d3-flame-graph (the maintained D3 flame graph,
// with zoom and search built in) as an icicle: the roots on top, as the call
// tree reads. Search marks the matching frames and says their share (the
// server's: the samples with a matching function on their stack); a
// click zooms into a frame in the page, without asking the server, and the
// zoom's bar focuses every view on its function; with a diff, frames are red
// where the other capture spends a larger share, blue where a smaller one,
// else coloured by kind of code (native, kernel, Python, JavaScript, ...)
// with a legend.
// By keyboard the graph is one stop of the Tab order: arrows move between
// frames by position (up to the caller, down to the leftmost callee, left
// and right among siblings), Enter zooms, F focuses, Escape zooms out.
import flamegraph from 'd3-flame-graph';
import type {FlameDatum, FlameGraph as Chart} from 'd3-flame-graph';
import {select, selection} from 'd3-selection';
import {h} from 'preact';
import {useEffect, useRef, useState} from 'preact/hooks';
import {DiffRow, flameRoot, Report, TreeNode} from '../api';
import {textHash, useWidth} from './common';

// d3-flame-graph animates every frame through d3-transition, even at a
// duration of 0: each of its attributes and labels was set by a timer of
// its own, some 2,000 for a graph of 682 frames, the larger part of the
// 200 ms its drawing took on the page's first paint. Nothing here
// animates: a transition sets what it is given at once.
type Immediate = {
  duration: () => Immediate; ease: () => Immediate; delay: () => Immediate;
  attr: (name: string, value: unknown) => Immediate; style: (name: string, value: unknown) => Immediate;
  text: (value: unknown) => Immediate;
};
(selection.prototype as unknown as {transition: () => Immediate}).transition = function(this: any) {
  const s = this;
  const t: Immediate = {
    duration: () => t, ease: () => t, delay: () => t,
    attr: (name, value) => (s.attr(name, value), t),
    style: (name, value) => (s.style(name, value), t),
    text: (value) => (s.text(value), t),
  };
  return t;
};

export function diffColor(delta: number|undefined): string|null {
  if (delta === undefined || Math.abs(delta) < 0.05) return null;
  const strength = Math.min(1, Math.abs(delta) / 10);
  const light = Math.round(85 - 40 * strength);
  return delta > 0 ? `hsl(0, 80%, ${light}%)` : `hsl(215, 80%, ${light}%)`;
}

export const PRUNED_COLOR = 'hsl(0, 0%, 70%)';

// Each kind of code's hue and what the legend calls it; frames of a kind
// vary in lightness by name, so that neighbours stay apart.
export const KINDS: Record<string, {hue: number; saturation: number; label: string}> = {
  native: {hue: 28, saturation: 85, label: 'native'},
  inline: {hue: 45, saturation: 80, label: 'inlined'},
  kernel: {hue: 0, saturation: 60, label: 'kernel'},
  python: {hue: 205, saturation: 60, label: 'Python'},
  javascript: {hue: 52, saturation: 75, label: 'JavaScript'},
  interpreted: {hue: 180, saturation: 40, label: 'interpreted'},
  jit: {hue: 120, saturation: 45, label: 'JIT code'},
  other: {hue: 0, saturation: 0, label: 'other (the recording\'s own names)'},
};

// A frame's colour by its kind of code, lighter or darker by its name.
export function kindColor(kind: string, name: string): string {
  const k = KINDS[kind] ?? KINDS.native;
  return `hsl(${k.hue}, ${k.saturation}%, ${55 + (textHash(name) % 20)}%)`;
}

// The whole and the roots pruning left out are no function to focus on.
const focusable = (d: FlameDatum) => d.data.name !== 'all' && !d.data.pruned;

// A node's functions from the graph's root (below the whole).
export function fromRoot(d: {data: {name: string}; parent?: unknown}): string[] {
  const names: string[] = [];
  for (let n: any = d; n?.parent; n = n.parent) names.unshift(n.data.name);
  return names;
}

export function FlameGraph(props: {
  report: Report; search: string; searchShare: string; diff: Map<string, DiffRow>| null;
  onFocus: (name: string) => void;
  // A node's functions from the graph's root, to focus on its subtree
  // (absent where the graph is no call tree: inverted, or a diff).
  onSubtree?: (fromRoot: string[]) => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  // The chart lives across renders: its click reaches the latest handler.
  const onFocus = useRef(props.onFocus);
  onFocus.current = props.onFocus;
  const onSubtree = useRef(props.onSubtree);
  onSubtree.current = props.onSubtree;
  const [matched, setMatched] = useState<number>(0);
  const [zoomed, setZoomed] = useState<FlameDatum|null>(null);
  const chartRef = useRef<Chart|null>(null);
  // Drawn again at the page's width when the window is resized.
  const width = useWidth(host);
  useEffect(() => {
    const el = host.current!;
    if (width === 0) return;
    el.textContent = '';
    const chart = flamegraph()
                      .width(Math.max(320, width))
                      .cellHeight(18)
                      // Frames under 3 px are left out (slivers no label fits):
                      // at 30,000 samples over 50 threads, 682 frames drawn
                      // instead of 2,523, first paint 1.3 s instead of 2.2 s
                      // (bench/serve_view.py). A zoom draws them.
                      .minFrameSize(3)
                      .transitionDuration(0)
                      .sort(true)
                      .inverted(true)
                      .setLabelHandler(
                          (d: FlameDatum) => `${d.data.name}${
                              d.data.module ? ' [' + d.data.module + ']' : ''}: ${d.data.text}`,
                          )
                      // Plain text, case-insensitive: a search is what the user typed, not a regex.
                      .setSearchMatch(
                          (d: FlameDatum, term: string) =>
                              d.data.name.toLowerCase().includes(term.toLowerCase()),
                          )
                      .setSearchHandler((results: FlameDatum[]) => setMatched(results.length))
                      // Called once the graph has zoomed (by a click, Enter or a reset).
                      .onClick((d: FlameDatum) => {
                        setZoomed(d.parent ? d : null);
                        current = d;
                        decorate();
                      });
    chartRef.current = chart;
    setZoomed(null);
    const diff = props.diff;
    chart.setColorMapper((d: FlameDatum, original: string) => {
      if (d.data.pruned) return PRUNED_COLOR;
      if (!diff) return d.parent ? kindColor(d.data.kind, d.data.name) : original;
      return diffColor(diff.get(d.data.name)?.delta) ??
          (d.data.name === 'all' ? original : 'hsl(0, 0%, 82%)');
    });
    select(el).datum(flameRoot(props.report)).call(chart);
    // Frames named for screen readers, the graph one stop of the Tab order
    // (the current frame's), arrows moving by position. Done again after a
    // zoom: it draws frames that were too narrow before.
    let current: FlameDatum|null = null;
    const frames = () => select(el).selectAll<SVGGElement, FlameDatum>('g.frame');
    const elementOf = (d: FlameDatum) => frames().filter((x) => x === d).node();
    const shown = (ds: FlameDatum[]|undefined) =>
        (ds ?? []).filter((x) => elementOf(x)).sort((a, b) => a.x0 - b.x0);
    const move = (to: FlameDatum|null|undefined) => {
      if (!to || !elementOf(to)) return;
      current = to;
      decorate();
      elementOf(to)!.focus();
    };
    function decorate() {
      const all = frames();
      if (!current || !elementOf(current)) current = all.data()[0] ?? null;
      all.attr('tabindex', (d: FlameDatum) => (d === current ? 0 : -1))
          .attr('role', 'button')
          .attr('aria-label', (d: FlameDatum) => `${d.data.name}: ${d.data.text}`)
          .on('keydown', (e: KeyboardEvent, d: FlameDatum) => {
            const siblings = shown(d.parent?.children);
            const at = siblings.indexOf(d);
            const key = e.key;
            if (key === 'Enter' || key === ' ') {
              chart.zoomTo(d);
              elementOf(d)?.focus();
            } else if ((key === 'f' || key === 'F') && focusable(d)) {
              onFocus.current(d.data.name);
            } else if ((key === 's' || key === 'S') && focusable(d) && onSubtree.current) {
              onSubtree.current(fromRoot(d));
            } else if (key === 'Escape') {
              chart.resetZoom();
              elementOf(d)?.focus();
            } else if (key === 'ArrowUp') {
              move(d.parent);
            } else if (key === 'ArrowDown') {
              move(shown(d.children)[0]);
            } else if (key === 'ArrowLeft') {
              move(siblings[at - 1]);
            } else if (key === 'ArrowRight') {
              move(siblings[at + 1]);
            } else {
              return;
            }
            e.preventDefault();
            e.stopPropagation();
          });
    }
    decorate();
    // When the first flame graph was drawn, and each one (bench/serve_view
    // reads them).
    if (!performance.getEntriesByName('microscope:flame').length)
      performance.mark('microscope:flame');
    performance.mark('microscope:flame-drawn');
    if (props.search)
      chart.search(props.search);
    else
      setMatched(0);
    return () => chart.destroy();
  }, [props.report, props.search, props.diff, width]);
  return h(
      'div',
      null,
      props.search &&
          h('p', {class: 'matched', role: 'status'},
            matched ? `${matched} frames match; ${props.searchShare}` : 'no frame matches'),
      zoomed &&
          h('p', {class: 'zoomed', role: 'status'},
            `zoomed into ${zoomed.data.name} (${zoomed.data.text}), in the page `,
            focusable(zoomed) &&
                h('button', {onClick: () => onFocus.current(zoomed.data.name)}, 'focus every view on it (F)'),
            ' ',
            focusable(zoomed) && props.onSubtree &&
                h('button', {onClick: () => onSubtree.current?.(fromRoot(zoomed))},
                  'focus on this subtree only (S)'),
            ' ',
            h('button', {onClick: () => chartRef.current?.resetZoom()}, 'zoom out (Escape)')),
      h('div', {class: 'flame', ref: host, 'aria-label': 'flame graph', 'data-width': width}),
      !props.diff && h(KindLegend, {kinds: kindsOf(props.report)}),
  );
}

// The kinds of code a report's graph holds, in the legend's order.
export function kindsOf(report: Report): string[] {
  const seen = new Set<string>();
  const walk = (n: TreeNode) => {
    seen.add(n.pruned ? 'other' : n.kind ?? 'native');
    n.children?.forEach(walk);
  };
  (report.inverted ?? report.tree ?? []).forEach(walk);
  return Object.keys(KINDS).filter((k) => seen.has(k));
}

export function KindLegend(props: {kinds: string[]}) {
  return h('p', {class: 'kind-legend', 'aria-label': 'kinds of code'},
           props.kinds.map((k) => h('span', {class: 'zone-key', 'data-kind': k},
                                    h('i', {style: {background: kindColor(k, '')}}), KINDS[k].label)));
}

// The flame graph as a file of its own: the drawn SVG with each frame's
// label as SVG text (d3-flame-graph draws them as HTML in foreignObject,
// which other viewers do not show), its styles inlined.
export function flameSvg(svg: SVGSVGElement): string {
  const copy = svg.cloneNode(true) as SVGSVGElement;
  const ns = 'http://www.w3.org/2000/svg';
  copy.setAttribute('xmlns', ns);
  copy.querySelectorAll('foreignObject').forEach((fo) => {
    const div = fo.querySelector('div');
    const shown = div && div.style.display !== 'none' && div.textContent;
    if (shown) {
      const text = document.createElementNS(ns, 'text');
      text.setAttribute('x', '3');
      text.setAttribute('y', '13');
      text.textContent = div!.textContent;
      // Cut at the frame's width, as drawn: a nested svg clips what overflows.
      const clip = document.createElementNS(ns, 'svg');
      clip.setAttribute('width', fo.getAttribute('width') ?? '0');
      clip.setAttribute('height', fo.getAttribute('height') ?? '18');
      clip.appendChild(text);
      fo.replaceWith(clip);
    } else {
      fo.remove();
    }
  });
  const style = document.createElementNS(ns, 'style');
  style.textContent = 'rect { stroke: #fff; stroke-width: 1; } text { font: 12px sans-serif; fill: #000; } ' +
      '.fade { opacity: 0.6; }';
  copy.insertBefore(style, copy.firstChild);
  return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(copy);
}

// The flame graph as a PNG image: its SVG (flameSvg) drawn on a canvas at
// the screen's pixel ratio, on a white ground.
export async function flamePng(svg: SVGSVGElement): Promise<Blob> {
  const width = svg.width.baseVal.value, height = svg.height.baseVal.value;
  const url = URL.createObjectURL(new Blob([flameSvg(svg)], {type: 'image/svg+xml'}));
  try {
    const image = new Image();
    image.src = url;
    await image.decode();
    const canvas = document.createElement('canvas');
    canvas.width = Math.ceil(width * devicePixelRatio);
    canvas.height = Math.ceil(height * devicePixelRatio);
    const g = canvas.getContext('2d')!;
    g.fillStyle = '#ffffff';
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.drawImage(image, 0, 0, canvas.width, canvas.height);
    return await new Promise<Blob>((done, fail) =>
      canvas.toBlob((b) => (b ? done(b) : fail(new Error('the PNG could not be made'))), 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

// Saves `data` as a file named `name` (the browser's download).
export function download(name: string, data: string|Blob, type: string) {
  const url = URL.createObjectURL(data instanceof Blob ? data : new Blob([data], {type}));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
