// The parts of d3-flame-graph (no type definitions of its own) used here.
declare module 'd3-flame-graph' {
  export interface FlameDatum {
    data: {name: string; value: number; module: string; kind: string; text: string; pruned?: boolean};
    value: number;
    x0: number;  // the partition's start, in the whole's terms
    depth: number;
    parent: FlameDatum|null;
    children?: FlameDatum[];
  }
  export interface FlameGraph {
    (selection: unknown): void;
    width(w: number): FlameGraph;
    cellHeight(h: number): FlameGraph;
    minFrameSize(px: number): FlameGraph;
    transitionDuration(ms: number): FlameGraph;
    inverted(on: boolean): FlameGraph;
    sort(on: boolean): FlameGraph;
    title(text: string): FlameGraph;
    tooltip(on: boolean): FlameGraph;
    setLabelHandler(f: (d: FlameDatum) => string): FlameGraph;
    setSearchMatch(f: (d: FlameDatum, term: string) => boolean): FlameGraph;
    setSearchHandler(f: (results: FlameDatum[], sum: number, total: number) => void): FlameGraph;
    onClick(f: (d: FlameDatum) => void): FlameGraph;
    setColorMapper(f: (d: FlameDatum, original: string) => string): FlameGraph;
    search(term: string): void;
    zoomTo(d: FlameDatum): void;
    resetZoom(): void;
    clear(): void;
    destroy(): void;
  }
  export default function flamegraph(): FlameGraph;
}
