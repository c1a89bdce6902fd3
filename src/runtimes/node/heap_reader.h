// Reads V8 heap objects out of a running process, by the build's V8Layout:
// instance types, fields, Smis and strings. Target memory is untrusted:
// each object's type is read from its map before its fields are believed,
// strings are bounded in length and depth, and each refusal says what was
// wrong where.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "src/record/process_memory.h"
#include "src/runtimes/node/layout.h"

namespace microscope::runtimes::node {

class HeapReader {
 public:
  HeapReader(record::ProcessMemory* memory, const V8Layout* layout)
      : memory_(memory), layout_(layout) {}

  bool IsObject(uint64_t tagged) const;
  bool IsSmi(uint64_t word) const;
  int64_t SmiValue(uint64_t word) const;
  // The instance type in the map of the object `tagged` points at.
  Result<uint16_t> TypeOf(uint64_t tagged);
  // The word at `offset` of the object.
  Result<uint64_t> Word(uint64_t tagged, int64_t offset);
  bool IsString(uint16_t type) const;
  // A string's text, as UTF-8 (cons, sliced and thin strings followed), of
  // its first `max` UTF-16 code units.
  Result<std::string> ReadString(uint64_t tagged, size_t max = kMaxName);
  // Its first `max` UTF-16 code units (V8's source positions count them).
  Result<std::u16string> ReadCodeUnits(uint64_t tagged, size_t max);

  static constexpr size_t kMaxName = 4096;

 private:
  Status Read(uint64_t tagged, int64_t offset, void* out, size_t size, const char* what);
  Status AppendUnits(uint64_t tagged, int depth, size_t max, std::u16string* out);

  record::ProcessMemory* memory_;
  const V8Layout* layout_;
};

}  // namespace microscope::runtimes::node
