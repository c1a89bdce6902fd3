// The focused function's machine code with the samples at each
// instruction (self: the instruction was running; total: it was on the
// stack, a caller's samples on its call instruction), as the server
// disassembled it from the module files the capture names, proven by
// build ID; where a file cannot be read on the serving host, the server's
// reason and the sampled file offsets alone.
import {h} from 'preact';
import type {AssemblyModule, Report} from '../api';

const hex = (n: number) => n.toString(16);

function ModuleView({module: m}: {module: AssemblyModule}) {
  const heat = (percent: number) => Math.min(1, percent / Math.max(1e-9, m.total.percent));
  return h(
      'section',
      {class: 'source-file', 'aria-label': m.path},
      h('h2', null, m.path, ' ', h('span', {class: 'share'}, m.total.text)),
      m.unreadable && h('p', {class: 'unreadable', role: 'note'}, m.unreadable),
      m.unreadable && h(
          'table', {class: 'source', 'aria-label': `sampled offsets of ${m.path}`},
          h('thead', null, h('tr', null, h('th', null, 'self'), h('th', null, 'total'), h('th', null, 'file offset'))),
          h('tbody', null, m.addresses.map((a) => h(
              'tr', {class: 'costed', style: `--heat: ${heat(a.total.percent).toFixed(3)}`},
              h('td', null, a.self.text), h('td', null, a.total.text),
              h('td', {class: 'number'}, '0x' + hex(a.offset)))))),
      m.outside && m.outside.samples > 0 &&
          h('p', {class: 'hint'}, `${m.outside.text} at addresses no symbol shown holds`),
      (m.ranges ?? []).map((r) => h(
          'div', {class: 'asm-range'},
          h('h3', null, `${r.symbol} `, h('span', {class: 'share'}, `0x${hex(r.start)}, ${r.size} bytes`)),
          h('table', {class: 'source asm', 'aria-label': `instructions of ${r.symbol}`},
            h('thead', null,
              h('tr', null, h('th', null, 'self'), h('th', null, 'total'), h('th', null, 'address'),
                h('th', null, 'instruction'))),
            h('tbody', null, r.instructions.map((i) => h(
                'tr',
                {
                  class: i.total ? 'costed' : '',
                  style: i.total ? `--heat: ${heat(i.total.percent).toFixed(3)}` : undefined,
                  'data-address': hex(i.address),
                },
                h('td', null, i.self?.text ?? ''),
                h('td', null, i.total?.text ?? ''),
                h('td', {class: 'number'}, hex(i.address)),
                h('td', {class: 'code'}, i.text, i.target && h('span', {class: 'target'}, ` <${i.target}>`)))))),
          r.bytes_left_out > 0 && h('p', {class: 'hint'}, `${r.bytes_left_out} bytes more not shown`))),
  );
}

export function AssemblyView({report, focus}: {report: Report|null; focus: string}) {
  if (!focus) {
    return h(
        'p', {class: 'hint'},
        'Click a function (in the flame graph, the call tree or the functions) to see its ' +
            'machine code here.');
  }
  const a = report?.assembly;
  if (!a) return h('p', {class: 'hint'}, '…');
  return h(
      'div',
      {class: 'source-view', 'aria-label': `assembly of ${a.function}`},
      h('p', null,
        `${a.function}: on the stacks of ${a.total.text} of the samples` +
            (a.not_native.samples ? `, ${a.not_native.text} in no module's machine code` : '')),
      a.modules.length === 0 &&
          h('p', {class: 'unreadable', role: 'note'},
            'No machine code was sampled for this function (its frames are inlined into others, ' +
                'interpreted, or the kernel\'s).'),
      a.modules.map((m) => h(ModuleView, {module: m})),
  );
}
