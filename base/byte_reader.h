// A bounded little-endian reader over untrusted bytes: every read checks the
// remaining length first and fails (returns false) instead of overrunning.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace microscope {

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  size_t offset() const { return offset_; }
  size_t remaining() const { return bytes_.size() - offset_; }

  template <typename T>
  bool Read(T* out) {
    if (remaining() < sizeof(T)) return false;
    std::memcpy(out, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return true;
  }

  bool Skip(size_t n) {
    if (remaining() < n) return false;
    offset_ += n;
    return true;
  }

  // A view of the next n bytes (no copy).
  bool View(size_t n, std::span<const uint8_t>* out) {
    if (remaining() < n) return false;
    *out = bytes_.subspan(offset_, n);
    offset_ += n;
    return true;
  }

  // A NUL-terminated string padded with NULs to a multiple of 8 bytes (as
  // perf lays out MMAP2 filenames and COMM names); fails if no NUL lies within.
  bool PaddedString(std::string_view* out) {
    const char* p = reinterpret_cast<const char*>(bytes_.data() + offset_);
    const void* nul = std::memchr(p, 0, remaining());
    if (nul == nullptr) return false;
    size_t len = size_t(static_cast<const char*>(nul) - p);
    size_t padded = (len + 1 + 7) & ~size_t(7);
    if (padded > remaining()) return false;
    *out = std::string_view(p, len);
    offset_ += padded;
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  size_t offset_ = 0;
};

}  // namespace microscope
