// The call tree (callers first, or inverted: sampled functions first, then
// their callers): rows that expand and collapse, sorted by total or self,
// searched (matching rows marked, the paths to them opened), keyboard
// operable as a tree grid (arrows move, right opens, left closes, Enter
// focuses the views on the function).
import {h} from 'preact';
import {useMemo, useState} from 'preact/hooks';
import type {DiffRow, TreeNode} from '../api';
import {DiffCell} from './diff';

interface Row {
  node: TreeNode;
  id: string;  // the path of indices from the root
  depth: number;
  open: boolean;
  leaf: boolean;
}

function matches(node: TreeNode, search: string): boolean {
  return search !== '' && node.function.toLowerCase().includes(search.toLowerCase());
}

// Which paths hold a match below them (opened so the matches show).
function pathsToMatches(roots: TreeNode[], search: string): Set<string> {
  const out = new Set<string>();
  const walk = (n: TreeNode, id: string): boolean => {
    let below = false;
    (n.children ?? []).forEach((c, i) => {
      if (walk(c, id + '.' + i) || matches(c, search)) below = true;
    });
    if (below) out.add(id);
    return below;
  };
  roots.forEach((r, i) => walk(r, String(i)));
  return out;
}

export function CallTree(props: {
  roots: TreeNode[]; order: 'total' | 'self'; search: string; diff: Map<string, DiffRow>| null;
  onOrder: (order: 'total'|'self') => void;
  onFocus: (name: string) => void;
}) {
  // Opened by the user; the hottest path is open at first.
  const [opened, setOpened] = useState<Set<string>>(() => {
    const hot = new Set<string>();
    let nodes = props.roots, id = '';
    for (let depth = 0; depth < 12 && nodes.length; ++depth) {
      const best = nodes.reduce((a, b, i) => (b.total.value > nodes[a].total.value ? i : a), 0);
      id = id === '' ? String(best) : id + '.' + best;
      hot.add(id);
      nodes = nodes[best].children ?? [];
    }
    return hot;
  });
  const [closed, setClosed] = useState<Set<string>>(new Set());
  const [cursor, setCursor] = useState(0);
  const searchOpen =
      useMemo(() => pathsToMatches(props.roots, props.search), [props.roots, props.search]);
  const sorted = (nodes: TreeNode[]) =>
      nodes.map((node, i) => ({node, i}))
          .sort((a, b) => b.node[props.order].value - a.node[props.order].value);
  const rows: Row[] = [];
  const walk = (nodes: TreeNode[], prefix: string, depth: number) => {
    for (const {node, i} of sorted(nodes)) {
      const id = prefix === '' ? String(i) : prefix + '.' + i;
      const leaf = !(node.children ?? []).length;
      const open = !leaf && !closed.has(id) && (opened.has(id) || searchOpen.has(id));
      rows.push({node, id, depth, open, leaf});
      if (open && rows.length < 5000) walk(node.children!, id, depth + 1);
    }
  };
  walk(props.roots, '', 0);
  const toggle = (row: Row, open: boolean) => {
    if (row.leaf) return;
    const o = new Set(opened), c = new Set(closed);
    if (open)
      (o.add(row.id), c.delete(row.id));
    else
      (c.add(row.id), o.delete(row.id));
    setOpened(o);
    setClosed(c);
  };
  const onKey = (e: KeyboardEvent, index: number) => {
    const row = rows[index];
    const move = (to: number) => {
      e.preventDefault();
      const next = Math.max(0, Math.min(rows.length - 1, to));
      setCursor(next);
      (document.querySelector(`[data-row="${next}"]`) as HTMLElement | null)?.focus();
    };
    if (e.key === 'ArrowDown')
      move(index + 1);
    else if (e.key === 'ArrowUp')
      move(index - 1);
    else if (e.key === 'ArrowRight')
      (e.preventDefault(), toggle(row, true));
    else if (e.key === 'ArrowLeft')
      (e.preventDefault(), toggle(row, false));
    else if (e.key === 'Enter')
      props.onFocus(row.node.function);
  };
  const heading = (key: 'total'|'self') => h(
      'th',
      {'aria-sort': props.order === key ? 'descending' : 'none'},
      h('button', {onClick: () => props.onOrder(key)}, key),
  );
  return h(
      'table',
      {class: 'tree', role: 'treegrid', 'aria-label': 'call tree'},
      h(
          'thead',
          null,
          h('tr', null, heading('total'), heading('self'), props.diff && h('th', null, 'change'),
            h('th', null, 'function')),
          ),
      h(
          'tbody',
          null,
          rows.map((row, index) => {
            const d = props.diff?.get(row.node.function);
            return h(
                'tr',
                {
                  key: row.id,
                  'data-row': index,
                  'aria-level': row.depth + 1,
                  'aria-expanded': row.leaf ? undefined : row.open,
                  tabIndex: index === cursor ? 0 : -1,
                  class: matches(row.node, props.search) ? 'match' : undefined,
                  onKeyDown: (e: KeyboardEvent) => onKey(e, index),
                  onFocus: () => setCursor(index),
                },
                h('td', null, row.node.total.text),
                h('td', null, row.node.self.text),
                props.diff && h(DiffCell, {row: d}),
                h(
                    'td',
                    {style: {paddingLeft: `${0.5 + row.depth * 1.1}em`}},
                    h(
                        'button',
                        {
                          class: 'twisty',
                          tabIndex: -1,
                          'aria-label': row.open ? 'collapse' : 'expand',
                          disabled: row.leaf,
                          onClick: () => toggle(row, !row.open),
                        },
                        row.leaf     ? '' :
                            row.open ? '▾' :
                                       '▸',
                        ),
                    h(
                        'span',
                        {class: 'name', onDblClick: () => props.onFocus(row.node.function)},
                        row.node.function,
                        row.node.module && h('span', {class: 'module'}, ` [${row.node.module}]`),
                        ),
                    ),
            );
          }),
          ),
  );
}
