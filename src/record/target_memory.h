// The bound on what the programs being recorded make the recorder keep:
// their perf maps' and jitdumps' symbols, their GDB JIT objects, what their
// probe rings hold while it is decoded. A target writes these as it likes,
// so each recording has one bound for all of them (record
// --target-memory, 256 MiB by default), not one per file or per process: a
// program that starts a hundred children gets no more than one does. A
// source past the bound stops reading that target, says so in the
// capture, and the recording goes on.
#pragma once

#include <atomic>
#include <cstdint>

namespace microscope::record {

inline constexpr uint64_t kDefaultTargetMemory = uint64_t(256) << 20;

class TargetMemory {
 public:
  explicit TargetMemory(uint64_t limit = kDefaultTargetMemory) : limit_(limit) {}

  // Counts `bytes` more kept; false, and nothing counted, when that would
  // pass the bound.
  bool Take(uint64_t bytes) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > limit_ || used > limit_ - bytes) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        return false;
      }
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (used + bytes > peak &&
           !peak_.compare_exchange_weak(peak, used + bytes, std::memory_order_relaxed)) {
    }
    return true;
  }
  // Counts `bytes` kept whatever the bound: what was read before the bound
  // was found passed, and is kept until its target goes.
  void Count(uint64_t bytes) {
    const uint64_t used = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (used > peak && !peak_.compare_exchange_weak(peak, used, std::memory_order_relaxed)) {
    }
  }
  // Counts `bytes` (taken or counted before) as no longer kept.
  void Give(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  uint64_t peak() const { return peak_.load(std::memory_order_relaxed); }
  // How many times something was refused for the bound.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace microscope::record
