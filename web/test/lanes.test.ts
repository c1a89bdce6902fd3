import {describe, expect, it} from 'vitest';

import type {TraceTrack} from '../src/api';
import {gapTitle, trackTitle} from '../src/views/lanes';

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
