// A row's change in a diff: its share in the other capture minus its share
// in this one, in points; red (slower) when it grew, blue (faster) when not.
import {h} from 'preact';
import type {DiffRow} from '../api';

export function DiffCell({row}: {row: DiffRow|undefined}) {
  const delta = row?.delta ?? 0;
  return h(
      'td',
      {class: delta > 0 ? 'slower' :
           delta < 0    ? 'faster' :
                          ''},
      row ? row.delta_text : '',
  );
}
