// The flame graph's model, for a graph drawn on a canvas: each node of the
// call tree a frame with its depth and its place in the whole as [x0, x1)
// (shares of the root's value), children in name order (as d3-flame-graph,
// which drew it before, put them); which frames a zoom into one shows and
// where, at a width; the frame under a point; the frame a key moves to;
// the frames a search matches. Pure: the drawing and the events are
// views/flamecanvas.ts's.
import type {FlameNode} from '../api';

export interface Frame {
  node: FlameNode;
  depth: number;
  x0: number;  // where it starts and ends, as shares of the root's value
  x1: number;
  parent: Frame|null;
  children: Frame[];
}

// A frame as drawn: its left edge and width in pixels, its row's top.
export interface Drawn {
  frame: Frame;
  x: number;
  w: number;
  y: number;
}

// Every frame of the tree under `root` (root first, then depth first in
// drawing order), placed. Iterative: a stack thousands of calls deep is
// no recursion here.
export function layoutFlame(root: FlameNode): Frame[] {
  const total = root.value > 0 ? root.value : 1;
  const frames: Frame[] = [];
  const top: Frame = {node: root, depth: 0, x0: 0, x1: root.value / total, parent: null, children: []};
  const todo: Frame[] = [top];
  while (todo.length) {
    const f = todo.pop()!;
    frames.push(f);
    let x = f.x0;
    const kids = [...(f.node.children ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const node of kids) {
      const child: Frame = {node, depth: f.depth + 1, x0: x, x1: x + node.value / total, parent: f, children: []};
      f.children.push(child);
      x = child.x1;
    }
    for (let i = f.children.length - 1; i >= 0; i--) todo.push(f.children[i]);
  }
  return frames;
}

// What a zoom into `zoomed` (null: none) shows at `width` pixels: its
// ancestors across the whole width, it and the frames under it stretched
// to the width, each at least `minPx` wide (a narrower one would be a
// sliver no label fits; a zoom draws it). Rows are `row` pixels high, the
// root's at the top.
export function drawnFrames(frames: Frame[], zoomed: Frame|null, width: number, minPx: number,
                            row: number): Drawn[] {
  const [a, b] = zoomed ? [zoomed.x0, zoomed.x1] : [0, 1];
  const k = width / Math.max(b - a, Number.MIN_VALUE);
  const out: Drawn[] = [];
  for (let p = zoomed?.parent; p; p = p.parent) out.push({frame: p, x: 0, w: width, y: p.depth * row});
  const from = zoomed?.depth ?? 0;
  for (const f of frames) {
    if (f.depth < from || f.x1 <= a || f.x0 >= b) continue;
    const x0 = Math.max(f.x0, a), x1 = Math.min(f.x1, b);
    const w = (x1 - x0) * k;
    if (w < minPx) continue;
    out.push({frame: f, x: (x0 - a) * k, w, y: f.depth * row});
  }
  return out.sort((p, q) => p.frame.depth - q.frame.depth || p.x - q.x);
}

// The frame drawn under (x, y), if any.
export function frameAt(drawn: Drawn[], x: number, y: number, row: number): Drawn|null {
  for (const d of drawn) {
    if (y >= d.y && y < d.y + row && x >= d.x && x < d.x + d.w) return d;
  }
  return null;
}

// Where a key moves from `from` among the frames drawn: up to its caller,
// down to its leftmost callee, left and right to its neighbours among its
// caller's callees; null where there is none drawn.
export function moveFrom(drawn: Drawn[], from: Frame, key: string): Frame|null {
  const shown = new Set(drawn.map((d) => d.frame));
  const x = new Map(drawn.map((d) => [d.frame, d.x]));
  const inOrder = (fs: Frame[]) => fs.filter((f) => shown.has(f)).sort((p, q) => x.get(p)! - x.get(q)!);
  if (key === 'ArrowUp') return from.parent && shown.has(from.parent) ? from.parent : null;
  if (key === 'ArrowDown') return inOrder(from.children)[0] ?? null;
  const siblings = inOrder(from.parent?.children ?? []);
  const at = siblings.indexOf(from);
  if (key === 'ArrowLeft') return at > 0 ? siblings[at - 1] : null;
  if (key === 'ArrowRight') return at >= 0 && at + 1 < siblings.length ? siblings[at + 1] : null;
  return null;
}

// The frames whose function's name holds `term` (plain text, any case).
export function searchFrames(frames: Frame[], term: string): Set<Frame> {
  const t = term.toLowerCase();
  return new Set(t ? frames.filter((f) => f.node.name.toLowerCase().includes(t)) : []);
}

// A frame's functions from the graph's root (below the whole), to focus on
// its subtree.
export function pathOf(f: Frame): string[] {
  const names: string[] = [];
  for (let n: Frame|null = f; n?.parent; n = n.parent) names.unshift(n.node.name);
  return names;
}
