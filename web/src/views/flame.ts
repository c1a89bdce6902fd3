// What the flame graph's drawings share (views/flamecanvas.ts draws it):
// colours by kind of code, with a legend, or by change in a diff, and
// saving a drawing as a file.
import {h} from 'preact';
import {Report, TreeNode} from '../api';
import {textHash} from './common';

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

// A node's functions from the graph's root (below the whole).
export function fromRoot(d: {data: {name: string}; parent?: unknown}): string[] {
  const names: string[] = [];
  for (let n: any = d; n?.parent; n = n.parent) names.unshift(n.data.name);
  return names;
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
