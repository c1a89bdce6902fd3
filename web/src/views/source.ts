// The focused function's source lines with the samples at each (self:
// the function was running that line; total: that line was on the stack),
// as the server read them from the files the capture names; where a file
// cannot be read on the serving host, the server's reason and the costed
// line numbers alone.
import {h} from 'preact';
import type {Report, SourceFile} from '../api';

function FileView({file}: {file: SourceFile}) {
  const costs = new Map(file.lines.map((l) => [l.line, l]));
  const numbers =
      file.text ? file.text.map((_, i) => (file.first ?? 1) + i) : file.lines.map((l) => l.line);
  return h(
      'section',
      {class: 'source-file', 'aria-label': file.path},
      h('h2', null, file.path, ' ', h('span', {class: 'share'}, file.total.text)),
      file.unreadable && h('p', {class: 'unreadable', role: 'note'}, file.unreadable),
      h(
          'table',
          {class: 'source', 'aria-label': `lines of ${file.path}`},
          h('thead', null,
            h('tr', null, h('th', null, 'self'), h('th', null, 'total'), h('th', null, 'line'),
              h('th', null, 'code'))),
          h('tbody', null, numbers.map((n, i) => {
            const c = costs.get(n);
            // Hotter lines darker: the line's total share of the file's.
            const heat = c ? Math.min(1, c.total.percent / Math.max(1e-9, file.total.percent)) : 0;
            return h(
                'tr',
                {
                  class: c ? 'costed' : '',
                  style: c ? `--heat: ${heat.toFixed(3)}` : undefined,
                  'data-line': n,
                },
                h('td', null, c ? c.self.text : ''),
                h('td', null, c ? c.total.text : ''),
                h('td', {class: 'number'}, String(n)),
                h('td', {class: 'code'}, file.text ? file.text[i] : ''),
            );
          })),
          ),
  );
}

export function SourceView({report, focus}: {report: Report|null; focus: string}) {
  if (!focus) {
    return h(
        'p', {class: 'hint'},
        'Click a function (in the flame graph, the call tree or the functions) to see its ' +
            'source lines here.');
  }
  const s = report?.source;
  if (!s) return h('p', {class: 'hint'}, '…');
  return h(
      'div',
      {class: 'source-view', 'aria-label': `source of ${s.function}`},
      h('p', null,
        `${s.function}: on the stacks of ${s.total.text} of the samples` +
            (s.without_lines.samples ? `, ${s.without_lines.text} at no source line` : '')),
      s.files.length === 0 &&
          h('p', {class: 'unreadable', role: 'note'},
            'The capture has no source lines for this function (recorded without them, or its ' +
                'module has no debug information).'),
      s.files.map((f) => h(FileView, {file: f})),
  );
}
