import {describe, expect, it} from 'vitest';

import type {MarkerRow} from '../src/api';
import {markerRows} from '../src/views/markers';

const rows: MarkerRow[] = [
  ['zone', 1, 0, 100, 0, 'request', 'self 50 ns'],
  ['zone', 1, 10, 60, 1, 'parse', 'self 50 ns'],
  ['off-cpu', 1, 70, 90, 0, 'off CPU', 'sleeping, woken by io (2)'],
  ['mark', 1, 95, 95, 0, 'tick', ''],
];

describe('the marker table', () => {
  it('keeps the answer\'s order (by start), or puts the longest first', () => {
    expect(markerRows(rows, '', new Set(), 'start').map((r) => r[5])).toEqual(['request', 'parse', 'off CPU', 'tick']);
    expect(markerRows(rows, '', new Set(), 'duration').map((r) => r[5])).toEqual(['request', 'parse', 'off CPU', 'tick']);
    expect(markerRows([rows[3], rows[2]], '', new Set(), 'duration').map((r) => r[5])).toEqual(['off CPU', 'tick']);
  });
  it('searches names and details, in any case, and leaves out the kinds unchecked', () => {
    expect(markerRows(rows, 'WOKEN', new Set(), 'start').map((r) => r[5])).toEqual(['off CPU']);
    expect(markerRows(rows, 'pars', new Set(), 'start').map((r) => r[5])).toEqual(['parse']);
    expect(markerRows(rows, '', new Set(['zone']), 'start').map((r) => r[0])).toEqual(['off-cpu', 'mark']);
  });
  it('leaves the answer as it was', () => {
    markerRows(rows, '', new Set(), 'duration');
    expect(rows.map((r) => r[5])).toEqual(['request', 'parse', 'off CPU', 'tick']);
  });
});
