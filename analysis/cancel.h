// A query's stop signal: set from another thread (its deadline passed, the
// server stops) and read by analysis' long loops every kStride iterations,
// so a query ends within milliseconds of it with no clock and no lock in
// analysis. A loop that sees it returns what it has; BuildReport then says
// the query was cancelled instead of returning the partial model.
#pragma once

#include <atomic>
#include <cstddef>

namespace microscope::analysis {

class Cancel {
 public:
  Cancel() = default;  // never cancelled
  explicit Cancel(const std::atomic<bool>* flag) : flag_(flag) {}
  bool operator()() const { return flag_ != nullptr && flag_->load(std::memory_order_relaxed); }
  // At every kStride-th value of a loop's index: one branch per iteration.
  bool At(size_t i) const { return (i & (kStride - 1)) == 0 && (*this)(); }
  static constexpr size_t kStride = 4096;

 private:
  const std::atomic<bool>* flag_ = nullptr;
};

}  // namespace microscope::analysis
