// The capture's header: what ran, for how long, how many samples, how
// whole their stacks are, what was lost, and the problems the recorder met.
import {h} from 'preact';
import type {Report} from '../api';
import {percent} from '../format';

export function HeaderPanel({report}: {report: Report}) {
  const hd = report.header;
  const ends = hd.stack_ends ?? {};
  const complete = ends['complete'] ?? 0;
  const stacks = Object.values(ends).reduce((a, b) => a + b, 0);
  const rows: [string, string][] = [
    ['command', hd.command.join(' ')],
    ['duration', (hd.duration_ns / 1e9).toFixed(3) + ' s'],
    ['samples', String(hd.samples)],
    ['stack quality', stacks ? percent((100 * complete) / stacks) + ' complete' : 'no stacks'],
    ['lost', `${hd.lost_records} records, ${hd.lost_samples} samples`],
  ];
  if (report.filter) rows.push(['filter', report.filter]);
  if (report.filter) rows.push(['kept', `${report.all.samples} of ${hd.samples} samples`]);
  const problems = hd.problems ?? [];
  return h(
      'section',
      {class: 'header', 'aria-label': 'capture'},
      h('dl', null, rows.map(([k, v]) => [h('dt', null, k), h('dd', {'data-field': k}, v)])),
      problems.length > 0 &&
          h(
              'details',
              null,
              h('summary', null, `${problems.length} kinds of problems`),
              h('ul', null,
                problems.map((p) => h('li', null, `${p.count} × ${p.kind} (e.g. ${p.example})`))),
              ),
  );
}
