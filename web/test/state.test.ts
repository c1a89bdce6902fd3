import {describe, expect, it} from 'vitest';

import {DEFAULT_STATE, exactly, parseState, reportQuery, stateToSearch} from '../src/state';

describe('view state in the URL', () => {
  it('round-trips every field', () => {
    const state = {
      capture: 'run.mscap',
      view: 'flat' as const,
      search: 'malloc',
      focus: 'std::vector<int>::push_back(int&&)',
      thread: 'worker-a',
      time: '1s..2.5s',
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
  it('ignores unknown views and keys', () => {
    expect(parseState('?view=nope&colour=red')).toEqual(DEFAULT_STATE);
  });
});

describe('the API query', () => {
  it('focuses on exactly the function clicked', () => {
    const re = new RegExp(exactly('a.b(int*)'));
    expect(re.test('a.b(int*)')).toBe(true);
    expect(re.test('axb(int*)x')).toBe(false);
  });
  it('carries the filters', () => {
    const q = reportQuery({...DEFAULT_STATE, thread: '7', time: '..1s', focus: 'f'}, ['tree'], 0.1);
    const params = new URLSearchParams(q.split('?')[1]);
    expect(params.get('views')).toBe('tree');
    expect(params.get('thread')).toBe('7');
    expect(params.get('time')).toBe('..1s');
    expect(params.get('focus')).toBe('^f$');
    expect(params.get('min_percent')).toBe('0.1');
  });
});
