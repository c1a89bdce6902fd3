import {describe, expect, it} from 'vitest';

import {DiffRow, flameRoot, looksWithout, Report} from '../src/api';
import {sortDiffRows} from '../src/views/diff';

const row = (name: string, base: number, other: number): DiffRow => ({
  name,
  side: base === 0 ? 'other' : other === 0 ? 'base' : 'both',
  base_value: base,
  other_value: other,
  base_share: base / 100,
  other_share: other / 100,
  delta: (other - base) / 100,
  delta_text: '',
});

describe('the changes table', () => {
  const rows = [row('a', 10, 12), row('b', 30, 0), row('c', 0, 20), row('d', 5, 5)];
  it('puts the largest changes first, either way', () => {
    expect(sortDiffRows(rows, 'change').map((r) => r.name)).toEqual(['b', 'c', 'a', 'd']);
  });
  it('sorts by either share, larger first, and by name', () => {
    expect(sortDiffRows(rows, 'base').map((r) => r.name)).toEqual(['b', 'a', 'd', 'c']);
    expect(sortDiffRows(rows, 'other').map((r) => r.name)).toEqual(['c', 'a', 'd', 'b']);
    expect(sortDiffRows(rows, 'name').map((r) => r.name)).toEqual(['a', 'b', 'c', 'd']);
  });
  it('leaves the answer as it was', () => {
    sortDiffRows(rows, 'name');
    expect(rows.map((r) => r.name)).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('the flame graph of an inverted tree', () => {
  it('keeps the pruned roots as a frame, marked as such', () => {
    const cost = (value: number) => ({samples: value, value, percent: value, text: `${value}%`});
    const report = {
      all: cost(100),
      inverted: [
        {function: 'hot', module: 'm', self: cost(70), total: cost(70)},
        {function: 'other (pruned)', module: '', self: cost(30), total: cost(30), pruned: true},
      ],
    } as unknown as Report;
    const root = flameRoot(report);
    expect(root.children.map((c) => [c.name, c.value, c.pruned])).toEqual([
      ['hot', 70, false],
      ['other (pruned)', 30, true],
    ]);
    expect(root.children.reduce((a, c) => a + c.value, 0)).toBe(root.value);
  });
});

describe('the looks a capture cannot show', () => {
  const header = (sources: object) => ({header: {sources}} as unknown as Report);
  const off = (state: string) => ({state, values: {frames: 0}});
  const on = (frames: number) => ({state: 'on', values: {frames}});
  it('are the runtimes without frames, with the walker\'s reason', () => {
    expect(looksWithout(header({python: on(10), node: off('off: no V8 image was mapped')})))
        .toEqual({js: 'no JavaScript frames: no V8 image was mapped'});
    expect(looksWithout(header({python: off('off: no CPython interpreter was mapped'), node: on(3)})))
        .toEqual({python: 'no Python frames: no CPython interpreter was mapped'});
    expect(Object.keys(looksWithout(header({python: off('off: x'), node: off('off: y')})))).toEqual(['python', 'js']);
  });
  it('are none when the capture does not say (an import)', () => {
    expect(looksWithout(header({}))).toEqual({});
  });
});
