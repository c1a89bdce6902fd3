#include "src/runtimes/python/line_table.h"

#include <algorithm>
#include <cstdint>

namespace microscope::runtimes::python {
namespace {

// Reads the table's variable-length numbers: 6-bit chunks, least
// significant first, 0x40 set on every chunk but the last.
struct Reader {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
  bool ok = true;
  uint8_t Byte() {
    if (pos >= bytes.size()) {
      ok = false;
      return 0;
    }
    return bytes[pos++];
  }
  uint64_t Varint() {
    uint64_t value = 0;
    for (int shift = 0; ok && shift < 64; shift += 6) {
      uint8_t b = Byte();
      value |= uint64_t(b & 0x3f) << shift;
      if ((b & 0x40) == 0) return value;
    }
    ok = false;
    return 0;
  }
  // CPython's line deltas fit an int: a larger one is not its.
  int64_t Svarint() {
    uint64_t v = Varint();
    if (v > (uint64_t(1) << 33)) {
      ok = false;
      return 0;
    }
    return (v & 1) ? -int64_t(v >> 1) : int64_t(v >> 1);
  }
};

// Calls `entry(start, length, has_line, line)` for each entry of the table
// in order, until it returns false; returns false when an entry it reached
// is malformed.
template <typename Entry>
bool ForEachEntry(std::span<const uint8_t> table, int first_line, Entry entry) {
  Reader r{table};
  int64_t line = first_line;
  uint64_t start = 0;
  while (r.pos < table.size()) {
    uint8_t head = r.Byte();
    if ((head & 0x80) == 0) return false;
    const int code = (head >> 3) & 15;
    const uint64_t length = (head & 7) + 1;
    bool has_line = true;
    if (code == 15) {
      has_line = false;  // no location
    } else if (code == 14) {
      line += r.Svarint();  // long form: line delta, end line, columns
      r.Varint();
      r.Varint();
      r.Varint();
    } else if (code == 13) {
      line += r.Svarint();  // no columns
    } else if (code >= 10) {
      line += code - 10;  // one-line forms: start and end column bytes
      r.Byte();
      r.Byte();
    } else {
      r.Byte();  // short form: same line, a column byte
    }
    // Lines stay ints (the sum of int deltas may not).
    if (!r.ok || line > INT32_MAX || line < INT32_MIN) return false;
    if (!entry(start, length, has_line, int(line))) return true;
    start += length;
  }
  return true;
}

}  // namespace

LineLookup LineOfInstruction(std::span<const uint8_t> table, int first_line, uint32_t unit) {
  LineLookup found{LineLookup::kPastEnd, 0};
  const bool ok = ForEachEntry(
      table, first_line, [&](uint64_t start, uint64_t length, bool has_line, int line) {
        if (unit >= start + length) return true;
        found = has_line ? LineLookup{LineLookup::kLine, line} : LineLookup{LineLookup::kNoLine, 0};
        return false;
      });
  return ok ? found : LineLookup{LineLookup::kMalformed, 0};
}

LineTable LineTable::Decode(std::span<const uint8_t> table, int first_line) {
  LineTable t;
  t.malformed_ = !ForEachEntry(table, first_line,
                               [&](uint64_t start, uint64_t length, bool has_line, int line) {
                                 t.runs_.push_back({start + length, line, has_line});
                                 return true;
                               });
  return t;
}

LineLookup LineTable::Find(uint32_t unit) const {
  auto it = std::upper_bound(runs_.begin(), runs_.end(), uint64_t(unit),
                             [](uint64_t u, const Run& r) { return u < r.end; });
  if (it == runs_.end()) return {malformed_ ? LineLookup::kMalformed : LineLookup::kPastEnd, 0};
  return it->has_line ? LineLookup{LineLookup::kLine, it->line}
                      : LineLookup{LineLookup::kNoLine, 0};
}

}  // namespace microscope::runtimes::python
