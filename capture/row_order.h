// Puts a table's columns in the order of one of them, stably: the recorder
// appends rows as events arrive and the capture wants them in time order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace microscope::capture {

// Permutes every column in `columns` (the key among them, or not) into the
// order that sorts `key`; ties keep their order. Nothing moves when `key` is
// already sorted. Returns whether rows moved.
template <typename Key, typename... Columns>
bool SortRowsBy(const Key& key, Columns&... columns) {
  if (std::is_sorted(key.begin(), key.end())) return false;
  std::vector<uint32_t> order(key.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
  auto permute = [&](auto& column) {
    if (column.empty()) return;  // an optional column that is absent
    std::remove_reference_t<decltype(column)> sorted(column.size());
    for (size_t i = 0; i < order.size(); ++i) sorted[i] = column[order[i]];
    column = std::move(sorted);
  };
  // The order is fixed before any column moves, so the key may be one of them.
  (permute(columns), ...);
  return true;
}

}  // namespace microscope::capture
