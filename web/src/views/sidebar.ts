// The sidebar of the selected function (the focus): its self and total
// cost as time, samples and share, the functions that called it and those
// it called (each with the share of the samples where it did; a click
// selects that one), and a link to its source lines; and of the chosen
// zone: its statistics (count, total, self, mean, percentiles, each
// selecting its occurrence's time range), samples and time off CPU in it.
import {h} from 'preact';
import type {Cost, Report, ZoneAt} from '../api';
import {duration} from './common';

// "12.34% · 1.234 ms · 56 samples" (the time when the capture measures time).
export function costText(cost: Cost, unit: string): string {
  const parts = [cost.text];
  if (unit === 'nanoseconds') parts.push(duration(cost.value));
  parts.push(`${cost.samples} samples`);
  return parts.join(' · ');
}

// The call graph's transforms a sidebar offers for its function.
export type Transform = 'merge'|'drop'|'collapse';

export function Sidebar(props: {
  report: Report|null; onFocus: (name: string) => void; onSource: () => void; onAssembly: () => void;
  onTransform: (kind: Transform, name: string) => void;
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
      h('button', {onClick: props.onAssembly}, 'assembly'),
      h('div', {class: 'transforms', role: 'group', 'aria-label': 'transform the call graph'},
        h('button', {
          title: 'leave it out of every stack, its time going to its callers',
          onClick: () => props.onTransform('merge', n.function),
        }, 'merge into callers'),
        h('button', {
          title: 'leave out the samples with it on their stack',
          onClick: () => props.onTransform('drop', n.function),
        }, 'drop its samples'),
        n.module && !n.module.includes('/') && h('button', {
          title: `show the frames of ${n.module} as one frame`,
          onClick: () => props.onTransform('collapse', n.module),
        }, `collapse ${n.module}`)),
      list('callers', n.callers, n.more_callers),
      list('callees', n.callees, n.more_callees));
}

export function ZoneSidebar(props: {
  report: Report|null; zone: string; onSelect: (fromNs: number, toNs: number) => void;
}) {
  const rows = props.report?.zones?.rows;
  if (!rows) return h('section', {class: 'zone-stats', 'aria-label': 'selected zone'}, '…');
  const z = rows.find((r) => r.zone === props.zone);
  if (!z) return h('section', {class: 'zone-stats', 'aria-label': 'selected zone'},
                   h('p', {class: 'hint'}, `no occurrence of zone ${props.zone} in the thread and time shown`));
  const at = (label: string, a: ZoneAt) => [
    h('dt', null, label),
    h('dd', {'data-field': label},
      h('button', {
        class: 'link',
        title: `${a.thread} (${a.tid}) at ${duration(a.at_ns)}: select it`,
        onClick: () => props.onSelect(a.at_ns, a.at_ns + Math.max(1, a.duration_ns)),
      }, a.text)),
  ];
  return h(
      'section',
      {class: 'zone-stats', 'aria-label': 'selected zone'},
      h('h2', null, `zone ${z.zone}`, z.file && h('span', {class: 'module'}, ` ${z.file}:${z.line}`)),
      h('dl', null,
        h('dt', null, 'count'), h('dd', {'data-field': 'count'}, String(z.count)),
        h('dt', null, 'total'), h('dd', {'data-field': 'total'}, duration(z.total_ns)),
        h('dt', null, 'self'), h('dd', {'data-field': 'self'}, duration(z.self_ns)),
        h('dt', null, 'mean'), h('dd', {'data-field': 'mean'}, duration(z.mean_ns)),
        at('p50', z.p50), at('p90', z.p90), at('p99', z.p99), at('max', z.max),
        h('dt', null, 'samples'),
        h('dd', {'data-field': 'samples'}, `${z.samples} (${z.sample_percent.toFixed(2)}%)`),
        z.off_cpu_intervals > 0 && [h('dt', null, 'off CPU'),
                                    h('dd', null, `${duration(z.off_cpu_ns)} in ${z.off_cpu_intervals} intervals`)],
        z.open_at_end > 0 && [h('dt', null, 'open at end'), h('dd', null, String(z.open_at_end))],
        z.unmatched_ends > 0 && [h('dt', null, 'ends without a begin'), h('dd', null, String(z.unmatched_ends))]));
}
