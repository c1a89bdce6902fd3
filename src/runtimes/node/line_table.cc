#include "src/runtimes/node/line_table.h"

#include <algorithm>
#include <string>

namespace microscope::runtimes::node {
namespace {

// A varint: 7 bits a byte, least significant first, 0x80: more follow.
bool ReadVarint(std::span<const uint8_t> bytes, size_t* at, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (*at >= bytes.size()) return false;
    const uint8_t b = bytes[(*at)++];
    v |= uint64_t(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *out = v;
      return true;
    }
  }
  return false;
}

constexpr uint64_t kMaxWord = uint64_t(1) << 34;  // a zigzagged 32-bit value, shifted by 2
constexpr int64_t kMaxSum = int64_t(1) << 40;     // far past any real offset, far from overflow
// A position carries its inlining id (16 bits) above its 31 bits of offset
// and flag: 47 bits, zigzagged.
constexpr uint64_t kMaxPositionWord = uint64_t(1) << 49;
constexpr int64_t kMaxPosition = int64_t(1) << 48;

int64_t ZigZag(uint64_t u) {
  return int64_t(u >> 1) ^ -int64_t(u & 1);
}

}  // namespace

Result<std::vector<PositionEntry>> DecodePositionTable(std::span<const uint8_t> bytes,
                                                       bool flags_in_code_delta) {
  std::vector<PositionEntry> out;
  int64_t code = -1, raw = 0;
  size_t at = 0;
  while (at < bytes.size()) {
    const size_t entry = at;
    uint64_t code_word, position_word;
    if (!ReadVarint(bytes, &at, &code_word) || !ReadVarint(bytes, &at, &position_word)) {
      return Status::Error(StatusCode::kDataLoss,
                           "source position table: varint cut at byte " + std::to_string(entry));
    }
    // V8 writes 32-bit offsets and positions: a larger word, or sums that
    // leave that range, are not its.
    if (code_word > kMaxWord || position_word > kMaxPositionWord) {
      return Status::Error(StatusCode::kDataLoss, "source position table: entry at byte " +
                                                      std::to_string(entry) + " out of range");
    }
    int64_t delta;
    if (flags_in_code_delta) {
      delta = int64_t(code_word >> 2);
    } else {
      const int64_t v = ZigZag(code_word);
      delta = v >= 0 ? v : -(v + 1);
    }
    code += delta;
    raw += ZigZag(position_word);
    if (code > kMaxSum || code < -kMaxSum || raw >= kMaxPosition || raw < 0) {
      return Status::Error(StatusCode::kDataLoss, "source position table: entry at byte " +
                                                      std::to_string(entry) + " out of range");
    }
    // A SourcePosition: bit 0 external (a position in V8's own code, which
    // counts toward the deltas but is no JavaScript's), the script offset +
    // 1 in bits 1-30, the inlining id + 1 in bits 31-46.
    if ((raw & 1) != 0) continue;
    out.push_back({code, ((raw >> 1) & 0x3fffffff) - 1, int32_t((raw >> 31) & 0xffff) - 1});
  }
  return out;
}

const PositionEntry* EntryAt(std::span<const PositionEntry> entries, int64_t offset) {
  auto after =
      std::upper_bound(entries.begin(), entries.end(), offset,
                       [](int64_t o, const PositionEntry& e) { return o < e.code_offset; });
  return after == entries.begin() ? nullptr : &*(after - 1);
}

std::optional<int64_t> PositionAt(std::span<const PositionEntry> entries, int64_t offset) {
  std::optional<int64_t> found;
  for (const PositionEntry& e : entries) {
    if (e.code_offset > offset) break;
    found = e.position;
  }
  return found;
}

}  // namespace microscope::runtimes::node
