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
template <typename Key>
std::vector<uint32_t> SortingOrder(const Key& key) {
  std::vector<uint32_t> order(key.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return key[a] < key[b]; });
  return order;
}

template <typename Column>
void Permute(const std::vector<uint32_t>& order, Column& column) {
  if (column.empty()) return;  // an optional column that is absent
  Column sorted(column.size());
  for (size_t i = 0; i < order.size(); ++i) sorted[i] = column[order[i]];
  column = std::move(sorted);
}

template <typename Key, typename... Columns>
bool SortRowsBy(const Key& key, Columns&... columns) {
  if (std::is_sorted(key.begin(), key.end())) return false;
  // The order is fixed before any column moves, so the key may be one of them.
  const std::vector<uint32_t> order = SortingOrder(key);
  (Permute(order, columns), ...);
  return true;
}

// The same for every column of an event table (tables.h), `key` one of them.
template <typename Table, typename Key>
bool SortTableBy(Table& table, const Key& key) {
  if (std::is_sorted(key.begin(), key.end())) return false;
  const std::vector<uint32_t> order = SortingOrder(key);
  Table::ForEachColumn(table, [&](const auto&, auto& column) { Permute(order, column); });
  return true;
}

}  // namespace microscope::capture
