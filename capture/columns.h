// What follows from each event table's column list (tables.h): validation
// of every column by what its declaration says, and the visits that remap,
// mark or list references. Reading and writing the columns are in
// reader.cc and writer.cc, which walk the same lists.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::capture {

// The element type a column of T has in the file (an enum: its byte).
template <typename T>
using StoredType = typename std::conditional_t<std::is_enum_v<T>, std::underlying_type<T>,
                                               std::type_identity<T>>::type;

// Calls fn(table name, table) for every event table of `c` (const or not).
template <typename CaptureT, typename Fn>
void ForEachEventTable(CaptureT& c, Fn&& fn) {
#define MICROSCOPE_VISIT_TABLE(Struct, member, COLUMNS) fn(#member, c.member);
  MICROSCOPE_EVENT_TABLES(MICROSCOPE_VISIT_TABLE)
#undef MICROSCOPE_VISIT_TABLE
}

// Calls fn(table name, info, column) for every column of every event table
// that references `ref` (whose values are uint32_t ids).
template <typename CaptureT, typename Fn>
void ForEachRefColumn(CaptureT& c, Ref ref, Fn&& fn) {
  ForEachEventTable(c, [&](const char* table, auto& t) {
    std::remove_reference_t<decltype(t)>::ForEachColumn(t, [&](const ColumnInfo& info, auto& col) {
      using T = std::remove_cvref_t<decltype(col[0])>;
      if constexpr (std::is_same_v<T, uint32_t>) {
        if (info.ref == ref) fn(table, info, col);
      }
    });
  });
}

// "table[row].field": where a fault is, as errors say it.
inline std::string Where(const char* table, size_t row, const char* field) {
  return std::string(table) + "[" + std::to_string(row) + "]." + field;
}

// The rows each reference kind indexes in `c`, and their table's name.
size_t RefRows(const Capture& c, Ref ref);
const char* RefTable(Ref ref);

// Checks one event table of `c` by its declarations: every column as long
// as the table (an optional one: or empty), references in range (kNone
// where nullable), enum values and flag bits known, the table's order kept,
// no interval ending before it starts. Says the table, row and column of
// the first fault.
template <typename Table>
Status ValidateTable(const Capture& c, const char* name, const Table& t) {
  size_t rows = 0;
  const char* first = nullptr;
  Status status = OkStatus();
  const uint64_t* start = nullptr;
  Table::ForEachColumn(t, [&](const ColumnInfo& info, const auto& col) {
    if (!status.ok()) return;
    if (first == nullptr) {
      first = info.name;
      rows = col.size();
    }
    if (col.size() != rows && !(info.optional && col.empty())) {
      status = Status::Error(std::string(name) + " columns differ in length (" + first + " " +
                             std::to_string(rows) + ")");
      return;
    }
    auto where = [&](size_t i) {
      return std::string(name) + "[" + std::to_string(i) + "]." + info.name;
    };
    using T = std::remove_cvref_t<decltype(col[0])>;
    using S = StoredType<T>;
    if constexpr (std::is_same_v<T, uint32_t>) {
      if (info.ref != Ref::kNone) {
        const size_t count = RefRows(c, info.ref);
        for (size_t i = 0; i < col.size(); ++i) {
          const uint32_t id = col[i];
          if (id < count || (id == kNone && info.nullable)) continue;
          status = Status::Error(where(i) + " = " + std::to_string(id) + " is out of range (" +
                                 std::to_string(count) + " " + RefTable(info.ref) + ")");
          return;
        }
      }
    }
    if constexpr (std::is_integral_v<S> && sizeof(S) <= 4) {
      if (info.below != 0 || info.mask != 0) {
        for (size_t i = 0; i < col.size(); ++i) {
          const auto v = uint64_t(S(col[i]));
          if (info.below != 0 && (v < info.min || v >= info.below)) {
            status = Status::Error(where(i) + " has unknown value " + std::to_string(v));
            return;
          }
          if (info.mask != 0 && (v & ~uint64_t(info.mask)) != 0) {
            status = Status::Error(where(i) + " has unknown bits " + std::to_string(v));
            return;
          }
        }
      }
    }
    if constexpr (std::is_same_v<T, uint64_t>) {
      if (std::string_view(info.name) == "start") start = col.data();
      if (info.after_start && start != nullptr) {
        for (size_t i = 0; i < col.size(); ++i) {
          if (col[i] < start[i]) {
            status = Status::Error(where(i) + " is before its start");
            return;
          }
        }
      }
      if (info.ascending) {
        for (size_t i = 1; i < col.size(); ++i) {
          if (col[i] < col[i - 1]) {
            status = Status::Error(where(i) + " goes back in time");
            return;
          }
        }
      }
    }
  });
  return status;
}

}  // namespace microscope::capture
