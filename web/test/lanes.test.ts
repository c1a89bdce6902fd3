import {describe, expect, it} from 'vitest';

import type {TraceTrack} from '../src/api';
import {axisTicks, columnText, gapTitle, laneRows, trackKey, trackTitle} from '../src/views/lanes';

const track = (t: Partial<TraceTrack>): TraceTrack => ({
  trace: 0, track: 0, name: 'g / t', kind: 'thread', pid: 0, tid: 0, spans: 0, instants: 0,
  values: 0, covered: [], instant_counts: [], counter_max: [], ...t,
});

describe('the label of an imported track', () => {
  it('says what it holds and whose thread it is', () => {
    expect(trackTitle(track({spans: 3, instants: 1, pid: 7, tid: 8})))
        .toBe('thread track of an imported trace, 3 spans, 1 instants, thread 8');
    expect(trackTitle(track({kind: 'counter', values: 5, pid: 7})))
        .toBe('counter track of an imported trace, 5 counter values, process 7');
    expect(trackTitle(track({kind: 'device', spans: 2})))
        .toBe('device track of an imported trace, 2 spans');
  });
});

describe('the label of a row with gaps', () => {
  it('names each cause once, and says they are not idle time', () => {
    expect(gapTitle('  LL  T L ')).toBe('gaps, not known (not idle): lost records, throttled');
    expect(gapTitle('W')).toBe('gaps, not known (not idle): walker not yet on');
    expect(gapTitle('   ')).toBe('');
  });
});

describe('the time axis', () => {
  it('ticks at round steps, at most as many as asked', () => {
    expect(axisTicks(0, 1e9, 8)).toEqual([0, 2e8, 4e8, 6e8, 8e8, 1e9]);
    expect(axisTicks(1.5e9, 2e9, 8)).toEqual([1.5e9, 1.6e9, 1.7e9, 1.8e9, 1.9e9, 2e9]);
    const many = axisTicks(0, 7_777_777, 8);
    expect(many.length).toBeLessThanOrEqual(8);
    expect(many[1] - many[0]).toBe(1e6);
  });
});

describe('a lane column\'s tooltip', () => {
  it('says the thread, the time, the samples, time off CPU, gaps and zones', () => {
    const lane = {
      tid: 7, name: 'w', total: 3, buckets: [0, 3], off_cpu: {sleeping: [0, 2_000_000]},
      gaps: ' L', zones: ' a', events: '  ',
    };
    expect(columnText(lane, 1, 1e9, 5e6, ['spin'])).toEqual([
      'w (7)', '1.005 s to 1.010 s', '3 samples', '2.000 ms off CPU, sleeping',
      'gap, not known: lost records', 'zone spin',
    ]);
  });
});

describe('the timeline\'s rows', () => {
  const lane = (tid: number, pid: number, buckets: number[]) =>
      ({tid, pid, name: `t${tid}`, total: buckets.reduce((a, b) => a + b, 0), buckets});
  const lanes = [lane(11, 10, [5, 0]), lane(20, 20, [1, 1]), lane(12, 10, [0, 2])];
  // As the server sends them: a pid, no tid.
  const proc = (pid: number, name: string, buckets: number[]) => ({...lane(0, pid, buckets), name});
  const processes = [proc(10, 'cc1plus', [5, 3]), proc(20, 'as', [1, 1]), proc(30, 'ld', [0, 1])];
  it('are the threads as they come without processes (one process)', () => {
    expect(laneRows(lanes, [], new Set()).map((r) => r.kind)).toEqual(['thread', 'thread', 'thread']);
  });
  it('group the drawn threads under their process, in the server\'s order, with its lane', () => {
    const rows = laneRows(lanes, processes, new Set());
    expect(rows.map((r) => (r.kind === 'process' ? `${r.name}:${r.lane.buckets}` : r.lane.tid)))
        .toEqual(['cc1plus:5,3', 11, 12, 'as:1,1', 20]);
  });
  it('leave out the hidden threads, and a hidden process with its threads', () => {
    const hidden = new Set([trackKey('thread', 11), trackKey('process', 20)]);
    expect(laneRows(lanes, [], new Set(), new Set([trackKey('thread', 11)])).map((r) => r.lane.tid))
        .toEqual([20, 12]);
    const rows = laneRows(lanes, processes, new Set(), hidden);
    expect(rows.map((r) => (r.kind === 'process' ? `${r.name}:${r.threads}` : r.lane.tid)))
        .toEqual(['cc1plus:1', 12]);
    // A thread whose tid is its process's pid is hidden as a thread only.
    expect(laneRows(lanes, processes, new Set(), new Set([trackKey('thread', 20)]))
               .map((r) => (r.kind === 'process' ? r.name : r.lane.tid)))
        .toEqual(['cc1plus', 11, 12]);
  });
  it('fold a collapsed process into its heading', () => {
    const rows = laneRows(lanes, processes, new Set([10]));
    expect(rows.map((r) => (r.kind === 'process' ? `${r.pid}${r.collapsed ? '+' : ''}` : r.lane.tid)))
        .toEqual(['10+', '20', 20]);
  });
});
