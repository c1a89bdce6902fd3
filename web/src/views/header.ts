// The capture's header as report prints it (the server's lines): what ran,
// for how long, how many samples, how whole their stacks are, what was
// lost, the problems the recorder met; its notes folded away.
import {h} from 'preact';
import type {Report} from '../api';

export function HeaderPanel({report}: {report: Report}) {
  const lines = report.header.lines ?? [];
  const shown = lines.filter((l) => l.label !== 'note');
  const notes = lines.filter((l) => l.label === 'note');
  // A line without a label continues the one above (one problem per line).
  let field = '';
  return h(
      'section',
      {class: 'header', 'aria-label': 'capture'},
      h('dl', null, shown.map((l) => {
        field = l.label || field;
        return [h('dt', null, l.label), h('dd', {'data-field': field}, l.text)];
      })),
      notes.length > 0 &&
          h('details', null, h('summary', null, `${notes.length} notes`),
            h('ul', null, notes.map((n) => h('li', null, n.text)))),
  );
}
