import {describe, expect, it} from 'vitest';

import type {MarkerRow} from '../src/api';
import {chartRows, markerAt, markerColor, markerText, nameColor} from '../src/views/markerchart';
import {STATE_COLORS} from '../src/views/lanes';

const rows: MarkerRow[] = [
  ['zone', 2, 0, 100, 0, 'request', 'self 50 ns'],
  ['zone', 2, 10, 60, 1, 'parse', 'self 50 ns'],
  ['off-cpu', 2, 70, 90, 0, 'off CPU', 'sleeping, woken by io (2)'],
  ['counter', 2, 20, 20, 0, 'queue', '3'],
  ['counter', 2, 5, 5, 0, 'queue', '1'],
  ['label', 2, 0, 50, 0, 'user', 'alice'],
  ['zone', 1, 30, 40, 0, 'tick', 'self 10 ns'],
  ['gap', 0, 80, 85, 0, 'lost records', '2 lost'],
  ['mark', 2, 95, 95, 0, 'tick', ''],
];

describe('the marker chart', () => {
  it('has a row per thread and kind, per zone depth, label and counter, every thread last', () => {
    expect(chartRows(rows).map((r) => `${r.tid} ${r.title}`)).toEqual([
      '1 zones', '2 zones', '2 zones, depth 1', '2 label user', '2 marks', '2 counter queue', '2 off CPU', '0 gaps',
    ]);
  });
  it('orders each row by start, and reads a counter\'s values with its range from 0', () => {
    const counter = chartRows(rows).find((r) => r.kind === 'counter')!;
    expect(counter.markers.map((m) => m[2])).toEqual([5, 20]);
    expect(counter.values).toEqual([1, 3]);
    expect([counter.low, counter.high]).toEqual([0, 3]);
  });
  it('finds the shortest marker under a time, within the slack', () => {
    const zones = chartRows(rows).find((r) => r.tid === 2 && r.kind === 'zone')!;
    expect(markerAt(zones, 50, 0)?.[5]).toBe('request');
    const marks = chartRows(rows).find((r) => r.kind === 'mark')!;
    expect(markerAt(marks, 96, 2)?.[5]).toBe('tick');
    expect(markerAt(marks, 90, 2)).toBeNull();
    // A marker under the time wins over a shorter one within the slack.
    const near = chartRows([['zone', 1, 0, 10, 0, 'long', ''], ['zone', 1, 11, 12, 0, 'short', '']])[0];
    expect(markerAt(near, 9, 3)?.[5]).toBe('long');
    expect(markerAt(near, 13, 3)?.[5]).toBe('short');
  });
  it('colours off CPU by state and a name the same everywhere', () => {
    expect(markerColor(rows[2])).toBe(STATE_COLORS.sleeping);
    expect(markerColor(rows[0])).toBe(nameColor('request'));
    expect(nameColor('request')).not.toBe(nameColor('parse'));
  });
  it('says a marker\'s name, kind, thread, time and duration', () => {
    expect(markerText(rows[1], 'worker (2)')).toEqual(['parse', 'zone on worker (2)', 'at 10 ns', 'for 50 ns', 'self 50 ns']);
    expect(markerText(rows[3], 'worker (2)')).toEqual(['queue', 'counter on worker (2)', 'at 20 ns', 'value 3']);
  });
});
