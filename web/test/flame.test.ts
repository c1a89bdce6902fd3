import {describe, expect, it} from 'vitest';

import type {Report, TreeNode} from '../src/api';
import {flameRoot} from '../src/api';
import {kindColor, kindsOf} from '../src/views/flame';

const node = (fn: string, kind: string|undefined, children: TreeNode[] = []): TreeNode => ({
  function: fn, module: '', kind, children,
  self: {samples: 1, value: 1, percent: 1, text: '1%'},
  total: {samples: 1, value: 1, percent: 1, text: '1%'},
});

describe('the flame graph\'s kinds of code', () => {
  const report = {
    all: {samples: 1, value: 1, percent: 100, text: '100%'},
    tree: [node('main', undefined, [node('handler', 'python', [node('schedule', 'kernel')])]),
           {...node('other (pruned)', 'other'), pruned: true}],
  } as unknown as Report;
  it('lists the kinds the graph holds, in the legend\'s order, native when a node says none', () => {
    expect(kindsOf(report)).toEqual(['native', 'kernel', 'python', 'other']);
  });
  it('gives each node its kind, native when absent', () => {
    const root = flameRoot(report);
    expect(root.children[0].kind).toBe('native');
    expect(root.children[0].children[0].kind).toBe('python');
  });
  it('colours a kind by its hue, names of a kind apart by lightness', () => {
    expect(kindColor('kernel', 'schedule')).toMatch(/^hsl\(0, 60%, \d+%\)$/);
    expect(kindColor('python', 'a')).toMatch(/^hsl\(205, /);
    expect(kindColor('unknown kind', 'a')).toBe(kindColor('native', 'a'));
    const lights = new Set(['a', 'b', 'c', 'd', 'e'].map((n) => kindColor('native', n)));
    expect(lights.size).toBeGreaterThan(1);
  });
});
