#include "src/runtimes/node/heap_reader.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/hex.h"

namespace microscope::runtimes::node {
namespace {

constexpr int kMaxDepth = 16;  // cons, sliced and thin strings followed

}  // namespace

bool HeapReader::IsObject(uint64_t tagged) const {
  return tagged != 0 &&
         (tagged & uint64_t(layout_->heap_object_tag_mask)) == uint64_t(layout_->heap_object_tag);
}

bool HeapReader::IsSmi(uint64_t word) const {
  return (word & uint64_t(layout_->smi_tag_mask)) == 0;
}

int64_t HeapReader::SmiValue(uint64_t word) const {
  return int64_t(word) >> (layout_->smi_shift_size + 1);
}

Status HeapReader::Read(uint64_t tagged, int64_t offset, void* out, size_t size, const char* what) {
  if (!IsObject(tagged)) {
    return Status::Error(StatusCode::kDataLoss,
                         std::string(what) + ": " + HexAddress(tagged) + " is not a heap object");
  }
  const uint64_t address = tagged - uint64_t(layout_->heap_object_tag) + uint64_t(offset);
  if (!memory_->Read(address, out, size)) {
    return Status::Error(StatusCode::kUnavailable,
                         std::string(what) + ": " + HexAddress(address) + " unreadable");
  }
  return OkStatus();
}

Result<uint16_t> HeapReader::TypeOf(uint64_t tagged) {
  uint64_t map;
  RETURN_IF_ERROR(Read(tagged, layout_->heap_object_map, &map, sizeof(map), "object's map"));
  uint16_t type;
  RETURN_IF_ERROR(Read(map, layout_->map_instance_type, &type, sizeof(type), "map's type"));
  return type;
}

Result<uint64_t> HeapReader::Word(uint64_t tagged, int64_t offset) {
  uint64_t word;
  RETURN_IF_ERROR(Read(tagged, offset, &word, sizeof(word), "object's field"));
  return word;
}

bool HeapReader::IsString(uint16_t type) const {
  return (type & layout_->is_not_string_mask) == layout_->string_tag;
}

Result<std::string> HeapReader::ReadString(uint64_t tagged, size_t max) {
  ASSIGN_OR_RETURN(std::u16string units, ReadCodeUnits(tagged, max));
  std::string out;
  for (size_t i = 0; i < units.size(); ++i) {
    const char16_t u = units[i];
    if (u >= 0xd800 && u < 0xdc00 && i + 1 < units.size() && units[i + 1] >= 0xdc00 &&
        units[i + 1] < 0xe000) {
      record::AppendUtf8(0x10000 + ((uint32_t(u) - 0xd800) << 10) + (units[i + 1] - 0xdc00), &out);
      ++i;
      continue;
    }
    record::AppendUtf8(u, &out);
  }
  return out;
}

Result<std::u16string> HeapReader::ReadCodeUnits(uint64_t tagged, size_t max) {
  std::u16string out;
  RETURN_IF_ERROR(AppendUnits(tagged, 0, max, &out));
  return out;
}

Status HeapReader::AppendUnits(uint64_t tagged, int depth, size_t max, std::u16string* out) {
  if (depth > kMaxDepth) {
    return Status::Error(
        StatusCode::kDataLoss,
        "string at " + HexAddress(tagged) + " nests deeper than " + std::to_string(kMaxDepth));
  }
  if (out->size() >= max) return OkStatus();
  ASSIGN_OR_RETURN(uint16_t type, TypeOf(tagged));
  if (!IsString(type)) {
    return Status::Error(StatusCode::kDataLoss, HexAddress(tagged) + " is not a string (type " +
                                                    std::to_string(type) + ")");
  }
  const int64_t representation = type & layout_->string_representation_mask;
  if (representation == layout_->cons_string_tag) {
    ASSIGN_OR_RETURN(uint64_t first, Word(tagged, layout_->cons_first));
    ASSIGN_OR_RETURN(uint64_t second, Word(tagged, layout_->cons_second));
    RETURN_IF_ERROR(AppendUnits(first, depth + 1, max, out));
    return AppendUnits(second, depth + 1, max, out);
  }
  if (representation == layout_->thin_string_tag) {
    ASSIGN_OR_RETURN(uint64_t actual, Word(tagged, layout_->thin_actual));
    return AppendUnits(actual, depth + 1, max, out);
  }
  int32_t length;
  RETURN_IF_ERROR(Read(tagged, layout_->string_length, &length, sizeof(length), "string length"));
  if (length < 0) {
    return Status::Error(StatusCode::kDataLoss, "string at " + HexAddress(tagged) + " claims " +
                                                    std::to_string(length) + " characters");
  }
  if (representation == layout_->sliced_string_tag) {
    ASSIGN_OR_RETURN(uint64_t parent, Word(tagged, layout_->sliced_parent));
    ASSIGN_OR_RETURN(uint64_t offset_word, Word(tagged, layout_->sliced_offset));
    const int64_t offset = IsSmi(offset_word) ? SmiValue(offset_word) : -1;
    if (offset < 0 || size_t(offset) > max) {
      // Its parent is read from its start: an offset past the bound would
      // read far more than asked.
      return Status::Error(StatusCode::kDataLoss, "sliced string at " + HexAddress(tagged) +
                                                      " starts " + std::to_string(offset) +
                                                      " units into its parent");
    }
    std::u16string whole;
    const size_t want = std::min(max - out->size(), size_t(length));
    RETURN_IF_ERROR(AppendUnits(parent, depth + 1, size_t(offset) + want, &whole));
    if (whole.size() < size_t(offset) + want) {
      return Status::Error(StatusCode::kDataLoss,
                           "sliced string at " + HexAddress(tagged) + " ends past its parent");
    }
    out->append(whole, size_t(offset), want);
    return OkStatus();
  }
  const size_t n = std::min(max - out->size(), size_t(length));
  const bool one_byte = (type & layout_->string_encoding_mask) == layout_->one_byte_string_tag;
  std::vector<uint8_t> raw(n * (one_byte ? 1 : 2));
  if (representation == layout_->external_string_tag) {
    // Node's scripts from 26 on: the characters are wherever the embedder
    // keeps them, behind the pointer V8 caches after the resource (8 bytes
    // on: a V8 with compressed pointers, as its sandbox needs, would keep
    // 4-byte handles there instead, so it is refused).
    if (layout_->smi_shift_size == 0) {
      return Status::Error(StatusCode::kUnavailable,
                           "string at " + HexAddress(tagged) +
                               " is external, in a V8 with compressed pointers (not read)");
    }
    if ((type & layout_->external_uncached_mask) != 0) {
      return Status::Error(StatusCode::kUnavailable,
                           "string at " + HexAddress(tagged) +
                               " is external and uncached (its characters are known only to "
                               "the embedder's code)");
    }
    ASSIGN_OR_RETURN(uint64_t data, Word(tagged, layout_->external_resource + 8));
    if (!raw.empty() && !memory_->Read(data, raw.data(), raw.size())) {
      return Status::Error(StatusCode::kUnavailable, "external string at " + HexAddress(tagged) +
                                                         ": its characters at " + HexAddress(data) +
                                                         " are unreadable");
    }
  } else if (representation != layout_->seq_string_tag) {
    return Status::Error(StatusCode::kDataLoss, "string at " + HexAddress(tagged) +
                                                    " has representation " +
                                                    std::to_string(representation));
  } else if (!raw.empty()) {
    RETURN_IF_ERROR(Read(tagged,
                         one_byte ? layout_->seq_one_byte_chars : layout_->seq_two_byte_chars,
                         raw.data(), raw.size(), "string characters"));
  }
  for (size_t i = 0; i < n; ++i) {
    char16_t u = raw[i];
    if (!one_byte) std::memcpy(&u, raw.data() + 2 * i, 2);
    out->push_back(u);
  }
  return OkStatus();
}

}  // namespace microscope::runtimes::node
