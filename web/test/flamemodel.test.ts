import {describe, expect, it} from 'vitest';

import type {FlameNode} from '../src/api';
import {drawnFrames, frameAt, layoutFlame, moveFrom, pathOf, searchFrames} from '../src/views/flamemodel';

const n = (name: string, value: number, children: FlameNode[] = []): FlameNode =>
    ({name, value, module: '', kind: 'native', text: '', children});

// all 100: main 90 (b 30, a 50 (leaf 50)), idle 10
const tree = n('all', 100, [n('main', 90, [n('b', 30), n('a', 50, [n('leaf', 50)])]), n('idle', 10)]);
const byName = (frames: ReturnType<typeof layoutFlame>, name: string) => frames.find((f) => f.node.name === name)!;

describe('the flame graph\'s layout', () => {
  const frames = layoutFlame(tree);
  it('places every node once, the root first, children in name order inside their caller', () => {
    expect(frames.map((f) => f.node.name)).toEqual(['all', 'idle', 'main', 'a', 'leaf', 'b']);
    const main = byName(frames, 'main'), a = byName(frames, 'a'), b = byName(frames, 'b');
    expect([main.x0, main.x1]).toEqual([0.1, 1]);
    expect([a.x0, a.x1]).toEqual([0.1, 0.6]);
    expect(b.x0).toBeCloseTo(0.6);
    expect(b.x1).toBeCloseTo(0.9);  // main's self time is the gap after its callees
    expect(byName(frames, 'leaf').depth).toBe(3);
    expect(byName(frames, 'leaf').parent).toBe(a);
  });
  it('lays out a stack 20,000 calls deep without recursion', () => {
    let deep = n('f19999', 1);
    for (let i = 19998; i >= 0; i--) deep = n(`f${i}`, 1, [deep]);
    const laid = layoutFlame(n('all', 1, [deep]));
    expect(laid.length).toBe(20001);
    expect(laid.at(-1)!.depth).toBe(20000);
  });
});

describe('what the flame graph draws', () => {
  const frames = layoutFlame(tree);
  it('draws the whole at the width, each row 18 px down, and leaves out frames under the floor', () => {
    const drawn = drawnFrames(frames, null, 1000, 3, 18);
    const main = drawn.find((d) => d.frame.node.name === 'main')!;
    expect([main.x, main.w, main.y]).toEqual([100, 900, 18]);
    expect(drawnFrames(frames, null, 20, 3, 18).map((d) => d.frame.node.name)).not.toContain('idle');
  });
  it('zoomed into a frame, stretches it and its callees to the width, its callers across it, nothing else', () => {
    const a = byName(frames, 'a');
    const drawn = drawnFrames(frames, a, 1000, 3, 18);
    expect(drawn.map((d) => [d.frame.node.name, Math.round(d.x), Math.round(d.w)])).toEqual([
      ['all', 0, 1000], ['main', 0, 1000], ['a', 0, 1000], ['leaf', 0, 1000]]);
  });
  it('finds the frame under a point', () => {
    const drawn = drawnFrames(frames, null, 1000, 3, 18);
    expect(frameAt(drawn, 150, 40, 18)?.frame.node.name).toBe('a');
    expect(frameAt(drawn, 150, 60, 18)?.frame.node.name).toBe('leaf');
    expect(frameAt(drawn, 950, 60, 18)).toBeNull();
  });
});

describe('the flame graph by keyboard and search', () => {
  const frames = layoutFlame(tree);
  const drawn = drawnFrames(frames, null, 1000, 3, 18);
  it('moves up to the caller, down to the leftmost callee, and among siblings by position', () => {
    const main = byName(frames, 'main'), a = byName(frames, 'a'), b = byName(frames, 'b');
    expect(moveFrom(drawn, main, 'ArrowDown')).toBe(a);
    expect(moveFrom(drawn, a, 'ArrowRight')).toBe(b);
    expect(moveFrom(drawn, b, 'ArrowLeft')).toBe(a);
    expect(moveFrom(drawn, b, 'ArrowRight')).toBeNull();
    expect(moveFrom(drawn, a, 'ArrowUp')).toBe(main);
  });
  it('matches names in any case, and nothing for an empty term', () => {
    expect([...searchFrames(frames, 'LEA')].map((f) => f.node.name)).toEqual(['leaf']);
    expect(searchFrames(frames, '').size).toBe(0);
  });
  it('gives a frame\'s path from the root, the whole left out', () => {
    expect(pathOf(byName(frames, 'leaf'))).toEqual(['main', 'a', 'leaf']);
  });
});
