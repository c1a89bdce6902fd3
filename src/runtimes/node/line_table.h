// V8's source position tables (a BytecodeArray's, untrusted bytes read from
// the target): bytecode offsets to positions in the script's source.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"

namespace microscope::runtimes::node {

struct PositionEntry {
  int64_t code_offset;    // bytecode offset, from the first bytecode
  int64_t position;       // UTF-16 offset in the script's source
  int32_t inlining = -1;  // in optimized code: the inlined call it is in (-1: none)
};

// The table's entries, in order. `flags_in_code_delta`: V8 14 on writes the
// code delta as an unsigned varint with two flag bits below it; earlier
// releases zig-zag it, its sign telling statements from expressions.
Result<std::vector<PositionEntry>> DecodePositionTable(std::span<const uint8_t> bytes,
                                                       bool flags_in_code_delta);

// The last entry at or before `offset` (nullptr: none), by binary search:
// V8 writes code offsets in order.
const PositionEntry* EntryAt(std::span<const PositionEntry> entries, int64_t offset);

// The position of the bytecode at `offset`: the last entry at or before it.
std::optional<int64_t> PositionAt(std::span<const PositionEntry> entries, int64_t offset);

}  // namespace microscope::runtimes::node
