import {describe, expect, it} from 'vitest';

import type {StackChart} from '../src/api';
import {duration} from '../src/views/common';
import {chartBoxes} from '../src/views/stackchart';

const chart = (runs: StackChart['runs'], stacks: number[][]): StackChart => ({
  tid: 1, thread: 't', samples: 0, threads: 1, truncated: false, runs, stacks,
  names: ['main', 'run', 'hot', 'cold'], modules: ['m', 'm', 'm', 'm'],
});

describe('the stack chart\'s boxes', () => {
  it('continue a frame while touching runs keep it under the same callers', () => {
    // main>run>hot [0,10), main>run>cold [10,20), main>run>hot [20,30)
    const boxes = chartBoxes(chart([[0, 10, 0, 5], [10, 20, 1, 5], [20, 30, 0, 5]], [[0, 1, 2], [0, 1, 3]]));
    const at = (depth: number) => boxes.filter((b) => b.depth === depth).map((b) => [b.name, b.start, b.end, b.samples]);
    expect(at(0)).toEqual([[0, 0, 30, 15]]);
    expect(at(1)).toEqual([[1, 0, 30, 15]]);
    expect(at(2)).toEqual([[2, 0, 10, 5], [3, 10, 20, 5], [2, 20, 30, 5]]);
  });
  it('break every frame at a gap (the thread was off CPU)', () => {
    const boxes = chartBoxes(chart([[0, 10, 0, 1], [15, 20, 0, 1]], [[0, 1, 2]]));
    expect(boxes.filter((b) => b.depth === 0).map((b) => [b.start, b.end])).toEqual([[0, 10], [15, 20]]);
  });
  it('break a frame whose caller changed, even of the same name', () => {
    // main>hot then run>hot: hot at depth 1 under another caller.
    const boxes = chartBoxes(chart([[0, 10, 0, 1], [10, 20, 1, 1]], [[0, 2], [1, 2]]));
    expect(boxes.filter((b) => b.depth === 1).length).toBe(2);
  });
});

describe('durations', () => {
  it('are written in the unit that reads best', () => {
    expect(duration(2_500_000_000)).toBe('2.500 s');
    expect(duration(1_234_000)).toBe('1.234 ms');
    expect(duration(56_000)).toBe('56.0 µs');
    expect(duration(12)).toBe('12 ns');
  });
});
