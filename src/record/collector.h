// Owns every perf_event fd and ring of a recording. Opens one cpu-clock
// event per CPU for each task handed to it (inherit=1, so the threads and
// children the task starts later are covered), shares one ring per CPU via
// PERF_EVENT_IOC_SET_OUTPUT, and copies raw records out of the rings into
// per-ring arenas. It parses nothing but record headers: decoding and state
// belong to decode.cc and processor.cc.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"
#include "src/record/decode.h"
#include "src/record/user_regs.h"

namespace microscope::record {

struct RingCopyStats {
  uint64_t samples = 0;
  uint64_t lost = 0;
  uint64_t errors = 0;  // corrupt headers; the rest of that read was dropped
};

// Copies the complete records in [tail, head) of a ring's data area (whose
// size is a power of two) into `arena`, joining records that wrap the end.
// Returns the new tail. Pure, so tests can hand it any bytes.
uint64_t CopyRingRecords(std::span<const uint8_t> data, uint64_t tail, uint64_t head,
                         std::vector<uint8_t>* arena, RingCopyStats* stats);

struct CollectorOptions {
  uint32_t frequency = 999;
  bool kernel_frames = true;
  uint32_t ring_pages = 256;  // data pages per CPU ring, a power of two
  // Non-zero: copy the user registers and this many bytes of user stack
  // with each sample (for our unwinder) instead of the kernel's user
  // frame-pointer chain. A multiple of 8, at most 65528.
  uint32_t stack_copy = 0;
  // false: a dummy event per task and CPU, which samples nothing but brings
  // the process, thread and mapping records (for BPF-only recordings).
  bool sample = true;
};

class Collector {
 public:
  static Result<std::unique_ptr<Collector>> Create(const CollectorOptions& options);
  ~Collector();

  // Opens events on `tid` on every CPU. `enable_on_exec`: start counting at
  // the task's next exec (a launched program); otherwise at once.
  Status AddTask(pid_t tid, bool enable_on_exec);
  Status Disable();

  // Waits up to `timeout_ms` for a ring to reach its watermark, or for one
  // of `extra_fds` (the BPF rings) to be readable.
  void Wait(int timeout_ms, std::span<const int> extra_fds = {});
  // Copies every complete record out of the rings.
  void Drain();

  // Records copied out, ring by ring, back to back (each 8-byte aligned).
  std::vector<std::vector<uint8_t>>& arenas() { return arenas_; }
  SampleLayout layout() const { return layout_; }
  bool kernel_frames() const { return kernel_frames_; }
  uint64_t samples() const { return stats_.samples; }
  uint64_t lost() const { return stats_.lost; }
  uint64_t ring_errors() const { return stats_.errors; }
  uint32_t ring_pages() const { return options_.ring_pages; }
  bool ring_shrunk() const { return ring_shrunk_; }

 private:
  struct Ring {
    int cpu;
    int fd;  // the event whose buffer this is (owned by events_)
    void* base = nullptr;
    size_t map_size = 0;
    size_t data_size = 0;
  };
  explicit Collector(const CollectorOptions& options);
  Result<int> OpenEvent(pid_t tid, int cpu, bool enable_on_exec);
  void DrainRing(size_t index);

  CollectorOptions options_;
  SampleLayout layout_;
  bool kernel_frames_;
  std::vector<int> cpus_;
  std::vector<ScopedFd> events_;
  std::vector<Ring> rings_;  // one per CPU, same order as cpus_
  std::vector<std::vector<uint8_t>> arenas_;
  RingCopyStats stats_;
  bool ring_shrunk_ = false;
};

// One line that says what to change when perf_event_open is refused.
std::string PermissionAdvice();

}  // namespace microscope::record
