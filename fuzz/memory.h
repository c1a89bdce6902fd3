// A target's memory made of the fuzzer's input: the bytes lie at kBase and
// nothing else is readable, as a process whose pages are mostly unmapped.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "src/record/process_memory.h"

namespace microscope::fuzz {

inline constexpr uint64_t kBase = 0x10000;

struct InputMemory : record::ProcessMemory {
  explicit InputMemory(std::span<const uint8_t> bytes) : ProcessMemory(0), bytes_(bytes) {}
  bool Read(uint64_t address, void* out, size_t size) override {
    if (address < kBase || address - kBase > bytes_.size() ||
        size > bytes_.size() - (address - kBase))
      return false;
    std::memcpy(out, bytes_.data() + (address - kBase), size);
    return true;
  }
  // An address inside the input from 4 of its bytes at `at`.
  uint64_t Pointer(size_t at) const {
    uint32_t v = 0;
    if (at + 4 <= bytes_.size()) std::memcpy(&v, bytes_.data() + at, 4);
    return kBase + (bytes_.empty() ? 0 : v % bytes_.size());
  }

 private:
  std::span<const uint8_t> bytes_;
};

}  // namespace microscope::fuzz
