// The CPython walker of the sampler's program (src/runtimes/sampler.h,
// python_walk.bpf.h), which runs at each sample of the recorder's own
// perf events and writes each walk into the sample's ring: says which
// processes are laid out how (py_processes) and which thread is which
// thread state (py_threads).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <linux/types.h>

#include "base/status.h"
#include "src/record/source_events.h"
#include "src/runtimes/python/layout.h"
#include "src/runtimes/python/python.h"
#include "src/runtimes/sampler.h"

namespace microscope::runtimes::python {

// Where one process's walk starts and how it reads.
struct ProcessWalk {
  uint64_t runtime = 0;    // address of _PyRuntime
  uint64_t pidns_dev = 0;  // the target's pid namespace, 0 when it is the recorder's
  uint64_t pidns_ino = 0;
};

class Walker {
 public:
  explicit Walker(std::shared_ptr<Sampler> sampler) : sampler_(std::move(sampler)) {}
  Walker(const Walker&) = delete;
  Walker& operator=(const Walker&) = delete;

  // Lays out process `pid` by `layout`; refused (with the reason) when a
  // release's offsets do not fit the walk's reads.
  Status SetProcess(uint32_t pid, const Layout& layout, const ProcessWalk& where);
  // Whether BPF walks process `pid` already: it laid it out itself, at a
  // fork of a walked parent or an exec of a known interpreter.
  bool Walks(uint32_t pid) const;
  // Bumps the process's generation (searches done in vain are tried again)
  // and records its threads: (tid as the recorder sees it, thread state,
  // native id as the target sees it).
  struct Thread {
    uint32_t tid;
    uint64_t tstate;
    uint64_t native_id;
  };
  Status SetThreads(uint32_t pid, std::span<const Thread> threads);
  void ForgetProcess(uint32_t pid);
  // Processes that exec the interpreter executable `path` are laid out by
  // `layout` at the exec (python.h: py_images); `runtime` is _PyRuntime's
  // link-time address.
  Status SetImage(const std::string& path, const Layout& layout, uint64_t runtime);
  // From now on a followed process that execs an executable named python*
  // that no SetImage gave is held at its exec (stopped) and reported so
  // (Sampler::Exec::held): whoever lays it out continues it.
  Status HoldUnknownExecs();

  // Hands `take` the code objects the walks copied at first sight
  // (python.h: py_code_snapshot) since the last call, in ring order.
  using SnapshotTaker = std::function<void(const py_code_snapshot&)>;
  Status DrainSnapshots(const SnapshotTaker& take);

  // Its layouts and thread map, for the other BPF objects that walk.
  Sampler& sampler() const { return *sampler_; }

 private:
  std::shared_ptr<Sampler> sampler_;
};

// What the walker reads for a process laid out by `layout`; refused (with
// the reason) when a release keeps a field where the walk's reads do not
// reach.
Result<py_process> ProcessOffsets(const Layout& layout, const ProcessWalk& where);

}  // namespace microscope::runtimes::python
