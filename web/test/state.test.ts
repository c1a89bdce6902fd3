import {describe, expect, it} from 'vitest';

import {containing, DEFAULT_STATE, exactly, exportQuery, lanesQuery, listed, toggled, parseState, reportQuery, searchQuery, sourceQuery, asmQuery, stateToSearch, subtreePath, threadFromLabel, threadLabel, timeRange, zoomLevels,} from '../src/state';

const params = (query: string) => new URLSearchParams(query.split('?')[1]);

describe('view state in the URL', () => {
  it('round-trips every field', () => {
    const state = {
      capture: 'run.mscap',
      view: 'tree' as const,
      search: 'malloc',
      focus: 'std::vector<int>::push_back(int&&)',
      thread: 'worker-a',
      zone: 'spin & wait',
      time: '1s..2.5s',
      zoom: '1s..3s,1s..2.5s',
      diff: 'before.mscap',
      order: 'self' as const,
      callees: '1' as const,
      metric: 'wall',
      look: 'python',
      merge: 'operator new(unsigned long)\nmalloc',
      collapse: 'libc.so.6',
      drop: 'std::sort<int*>',
      recursion: '1' as const,
      path: 'main;run',
    };
    expect(parseState(stateToSearch(state))).toEqual(state);
  });
  it('keeps only what differs from the defaults, in one order', () => {
    expect(stateToSearch(DEFAULT_STATE)).toBe('');
    expect(stateToSearch({...DEFAULT_STATE, time: '1s..2s', capture: 'a'}))
        .toBe(
            '?capture=a&time=1s..2s',
        );
  });
  it('ignores unknown views, values and keys', () => {
    expect(parseState('?view=nope&colour=red&order=up&callees=2&metric=heat&look=3d'))
        .toEqual(DEFAULT_STATE);
  });
});

describe('the API query', () => {
  it('focuses on exactly the function clicked', () => {
    const re = new RegExp(exactly('a.b(int*)'));
    expect(re.test('a.b(int*)')).toBe(true);
    expect(re.test('axb(int*)x')).toBe(false);
  });
  it('carries the filters and the diff', () => {
    const q = params(
        reportQuery({...DEFAULT_STATE, thread: '7', time: '..1s', focus: 'f', diff: 'b'}, 0.1));
    expect(q.get('views')).toBe('tree');
    expect(q.get('thread')).toBe('7');
    expect(q.get('time')).toBe('..1s');
    expect(q.get('focus')).toBe('^f$');
    expect(q.get('diff')).toBe('b');
    expect(q.get('min_percent')).toBe('0.1');
  });
  it('carries the transforms: merge and collapse repeated, drop as exclude, recursion', () => {
    const q = params(reportQuery({...DEFAULT_STATE, merge: 'a\nb(int, char)', collapse: 'libc.so.6',
                                  drop: 'x.y', recursion: '1'}, 0.1));
    expect(q.getAll('merge')).toEqual(['a', 'b(int, char)']);
    expect(q.getAll('collapse')).toEqual(['libc.so.6']);
    expect(q.get('exclude')).toBe('^x\\.y$');
    expect(q.get('collapse_recursion')).toBe('1');
    expect(toggled(toggled('a', 'b'), 'a')).toBe('b');
    expect(listed('')).toEqual([]);
  });
  it('asks for the inverted tree for callees', () => {
    expect(params(reportQuery({...DEFAULT_STATE, callees: '1'}, 0.1)).get('views'))
        .toBe('inverted');
  });
});

describe('the timeline', () => {
  it('asks for every thread\'s lanes over the whole recording', () => {
    const q = params(lanesQuery(
        {...DEFAULT_STATE, time: '1s..2s', focus: 'f', thread: '7', zone: 'spin'}, 300));
    expect(q.get('views')).toBe('lanes');
    expect(q.get('lane_width')).toBe('300');
    expect(q.get('time')).toBeNull();
    expect(q.get('focus')).toBeNull();
    expect(q.get('thread')).toBeNull();
    expect(q.get('zone')).toBeNull();
    expect(Number(q.get('top'))).toBeGreaterThanOrEqual(1000);
  });
  it('asks for the range zoomed into, the innermost', () => {
    const q = params(lanesQuery({...DEFAULT_STATE, zoom: '1s..3s,1.5s..2s', time: '1.6s..1.7s'}, 300));
    expect(q.get('time')).toBe('1.5s..2s');
    expect(zoomLevels({...DEFAULT_STATE, zoom: '1s..3s,1.5s..2s'})).toEqual(['1s..3s', '1.5s..2s']);
    expect(zoomLevels(DEFAULT_STATE)).toEqual([]);
  });
  it('filters the other views by the zone chosen', () => {
    expect(params(reportQuery({...DEFAULT_STATE, zone: 'spin'}, 0.1)).get('zone')).toBe('spin');
    expect(parseState('?zone=spin').zone).toBe('spin');
  });
  it('names threads as the picker shows them, and reads them back', () => {
    expect(threadLabel({name: 'worker-a', tid: 12})).toBe('worker-a (12)');
    expect(threadFromLabel('worker-a (12)')).toBe('12');
    expect(threadFromLabel(' 12 ')).toBe('12');
    expect(threadFromLabel('worker-a')).toBe('worker-a');
    expect(threadFromLabel('')).toBe('');
  });
  it('writes a selection as report --time does, in order', () => {
    expect(timeRange(2_500_000_000, 1_000_000_000)).toBe('1s..2.5s');
    expect(timeRange(0, 1234)).toBe('0s..0.000001s');
    expect(timeRange(10e9, 20e9)).toBe('10s..20s');
  });
});

describe('search', () => {
  it('asks for names holding the text, in any case, its characters taken as they are', () => {
    const re = new RegExp(containing('Work_c.x('));
    expect(re.test('std::work_C.x(int)')).toBe(true);
    expect(re.test('work_cax(')).toBe(false);
    expect(containing('a+b')).toBe('[aA]\\+[bB]');
  });
  it('keeps the thread and time range, not the focus', () => {
    const q = params(searchQuery(
        {...DEFAULT_STATE, search: 'malloc', focus: 'main', thread: 't1', time: '1s..2s'}));
    expect(q.get('focus')).toBe(containing('malloc'));
    expect(q.get('thread')).toBe('t1');
    expect(q.get('time')).toBe('1s..2s');
  });
});

describe('source', () => {
  it('asks for the focused function\'s lines in the thread and time range', () => {
    const q =
        params(sourceQuery({...DEFAULT_STATE, view: 'source', focus: 'a::b<int>', time: '1s..2s'}));
    expect(q.get('source')).toBe('a::b<int>');
    expect(q.get('focus')).toBeNull();
    expect(q.get('time')).toBe('1s..2s');
  });
  it('is a view of the URL', () => {
    expect(parseState('?view=source&focus=main').view).toBe('source');
  });
});

describe('assembly', () => {
  it('asks for the focused function\'s instructions over the source view\'s samples', () => {
    const state = {...DEFAULT_STATE, view: 'asm' as const, focus: 'a::b<int>', time: '1s..2s'};
    const q = params(asmQuery(state));
    expect(q.get('asm')).toBe('a::b<int>');
    expect(q.get('source')).toBeNull();
    const s = params(sourceQuery(state));
    s.delete('source');
    q.delete('asm');
    expect(q.toString()).toBe(s.toString());
  });
  it('is a view of the URL', () => {
    expect(parseState('?view=asm&focus=main').view).toBe('asm');
  });
});

describe('metric and look', () => {
  it('go to every query but the timeline\'s look', () => {
    const state = {...DEFAULT_STATE, metric: 'offcpu', look: 'python', search: 'x', focus: 'f'};
    for (const q of [reportQuery(state, 0.1), searchQuery(state), sourceQuery(state)]) {
      expect(params(q).get('metric')).toBe('offcpu');
      expect(params(q).get('look')).toBe('python');
    }
  });
});

describe('a focus on a subtree', () => {
  it('is a call path from the root, kept in the URL and asked of every view', () => {
    const state = {...DEFAULT_STATE, path: 'main;run'};
    expect(stateToSearch(state)).toBe('?path=main%3Brun');
    expect(parseState('?path=main%3Brun').path).toBe('main;run');
    expect(new URLSearchParams(reportQuery(state, 0.5).split('?')[1]).get('focus_path')).toBe('main;run');
    expect(new URLSearchParams(lanesQuery(state, 100).split('?')[1]).get('focus_path')).toBe('main;run');
    expect(new URLSearchParams(exportQuery(state, 'pprof').split('?')[1]).get('focus_path')).toBe('main;run');
  });
  it('of a node under a focus path begins with the path above the graph\'s root', () => {
    expect(subtreePath(DEFAULT_STATE, ['main', 'run', 'hot'])).toBe('main;run;hot');
    // The graph starts at run: its node run>hot is main;run;hot.
    expect(subtreePath({...DEFAULT_STATE, path: 'main;run'}, ['run', 'hot'])).toBe('main;run;hot');
  });
});
