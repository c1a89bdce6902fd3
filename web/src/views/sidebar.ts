// The sidebar of the selected function (the focus): its self and total
// cost as time, samples and share, the functions that called it and those
// it called (each with the share of the samples where it did; a click
// selects that one), and a link to its source lines.
import {h} from 'preact';
import type {Cost, Report} from '../api';
import {duration} from './common';

// "12.34% · 1.234 ms · 56 samples" (the time when the capture measures time).
export function costText(cost: Cost, unit: string): string {
  const parts = [cost.text];
  if (unit === 'nanoseconds') parts.push(duration(cost.value));
  parts.push(`${cost.samples} samples`);
  return parts.join(' · ');
}

export function Sidebar(props: {
  report: Report|null; onFocus: (name: string) => void; onSource: () => void;
}) {
  const n = props.report?.neighbors;
  if (!n) return h('aside', {class: 'sidebar', 'aria-label': 'selected function'}, '…');
  const unit = props.report!.header.unit;
  const list = (title: string, rows: typeof n.callers, more: number) => h(
      'section', {'aria-label': title},
      h('h3', null, title),
      rows.length === 0 ? h('p', {class: 'hint'}, 'none') :
                          h('ul', null, rows.map((r) => h('li', null,
                            h('button', {class: 'link', onClick: () => props.onFocus(r.function)}, r.function),
                            h('span', {class: 'cost'}, ` ${costText(r.cost, unit)}`)))),
      more > 0 && h('p', {class: 'hint'}, `and ${more} more`));
  return h(
      'aside',
      {class: 'sidebar', 'aria-label': 'selected function'},
      h('h2', null, n.function, n.module && h('span', {class: 'module'}, ` [${n.module}]`)),
      h('dl', null,
        h('dt', null, 'self'), h('dd', {'data-field': 'self'}, costText(n.self, unit)),
        h('dt', null, 'total'), h('dd', {'data-field': 'total'}, costText(n.total, unit))),
      h('button', {onClick: props.onSource}, 'source lines'),
      list('callers', n.callers, n.more_callers),
      list('callees', n.callees, n.more_callees));
}
