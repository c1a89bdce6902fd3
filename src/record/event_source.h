// A source of time-stamped events beside the perf rings: the BPF programs
// (off-CPU time, system calls, process exits), the runtimes' walkers and
// JIT namers, the probes SDK. The recording starts the sources the options
// ask for (src/cli/sources.cc), waits on their fds with the perf rings,
// polls each one every round, and the pump (pump.h) delivers their events,
// merged with the ring events in time order, to the recording's sink
// (row_sink.h), where each source appends its rows. A source is one file
// implementing EventSource and one line in src/cli/sources.cc.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capture/capture.h"
#include "src/record/jit_namer.h"
#include "src/record/record_options.h"
#include "src/record/row_sink.h"
#include "src/record/source_events.h"
#include "src/record/splicer.h"
#include "src/record/target_memory.h"

namespace microscope::runtimes {
class Sampler;  // src/runtimes/sampler.h
}

namespace microscope::record {

class Collector;
class SharedBpfMaps;  // bpf_loader.h

// What a source is started with.
struct SourceContext {
  const RecordOptions& options;
  pid_t target;  // the launched program (still at its gate) or the attached process
  bool launch;
  // The source says here whether it is on, with what settings, and notes.
  capture::Settings* settings;
  // The perf events and rings (a runtime's walker runs on the sampler's
  // events and writes into its rings).
  Collector* collector = nullptr;
  // One line to the user, as the recording's own warnings go.
  std::function<void(const std::string&)> warn;
  // The runtimes' walker maps, shared by every BPF object that walks
  // (bpf_loader.h), whichever starts first.
  SharedBpfMaps* shared_maps = nullptr;
  // The runtimes' one sampler program, loaded by the first runtime source
  // that needs it (runtimes::Sampler::Attach) and shared by the others.
  std::shared_ptr<runtimes::Sampler>* runtime_sampler = nullptr;
  // The recording's one bound on what its targets make it keep
  // (target_memory.h).
  TargetMemory* target_memory = nullptr;
};

// The span of the recording a poll may keep events from: [start, end).
struct PollWindow {
  uint64_t start = 0;
  uint64_t end = UINT64_MAX;  // UINT64_MAX while the recording runs
  bool launch = false;        // before `start` is the launched program's gate, not its run
  bool final = false;         // the recording has ended: take everything left
  // Records stamped before this have been processed: a thread one of them
  // started has its row (a name for it is given to that row, not a new one).
  uint64_t processed = 0;
};

class EventSource {
 public:
  virtual ~EventSource() = default;

  // Readable when events are waiting; -1 when there is nothing to wait on.
  virtual int wait_fd() const = 0;
  // Takes the events that are ready (all of them when `window.final`).
  // Read errors become counted problems.
  virtual void Poll(const PollWindow& window, RowSink* sink) = 0;

  // Events taken and not yet delivered, in the order of time_at().
  virtual size_t pending() const = 0;
  // When the event's stacks were taken: its place among the samples.
  virtual uint64_t time_at(size_t i) const = 0;
  virtual void Deliver(size_t i, RowSink* sink) = 0;
  // Forgets the first `n` pending events (delivered).
  virtual void Consume(size_t n) = 0;

  // After the last events went through the pump: counts and losses.
  virtual void Finish(RowSink* sink, capture::Settings* settings) = 0;

  // A runtime's source also places frames in the stacks (splicer.h); the
  // recording registers it with the processor. Null: it does not.
  virtual StackSplicer* splicer() { return nullptr; }
  // A source that names JIT code (jit_namer.h); null: it does not.
  virtual JitNamer* jit_namer() { return nullptr; }
  // A source told of mappings (mapping_watcher.h) that names no code; null: none.
  virtual MappingWatcher* mapping_watcher() { return nullptr; }
};

// An EventSource that queues no events of its own: a runtime that only
// splices stacks or names code.
class EventlessSource : public EventSource {
 public:
  size_t pending() const final { return 0; }
  uint64_t time_at(size_t) const final { return 0; }
  void Deliver(size_t, RowSink*) final {}
  void Consume(size_t) final {}
};

// An EventSource whose pending events are a list of T kept in time order.
// Subclasses append what they read with Take().
template <typename T>
class QueuedSource : public EventSource {
 public:
  size_t pending() const final { return queue_.size() - head_; }
  uint64_t time_at(size_t i) const final { return TimeOf(queue_[head_ + i]); }
  // Delivered events are dropped from the front in bulk, not one erase a
  // round: a busy source's backlog would be moved again at every pump.
  void Consume(size_t n) final {
    head_ += n;
    if (head_ >= 4096 && head_ * 2 >= queue_.size()) {
      queue_.erase(queue_.begin(), queue_.begin() + ptrdiff_t(head_));
      head_ = 0;
    }
  }

 protected:
  virtual uint64_t TimeOf(const T& event) const = 0;
  const T& at(size_t i) const { return queue_[head_ + i]; }

  // Moves `fresh` into the queue, keeping what `keep` accepts, in time order
  // (each read is sorted and merged in; the backlog is not sorted again).
  template <typename Keep>
  void Take(std::vector<T>* fresh, Keep keep) {
    const size_t sorted = queue_.size();
    for (T& e : *fresh) {
      if (keep(e)) queue_.push_back(std::move(e));
    }
    fresh->clear();
    auto less = [this](const T& a, const T& b) { return TimeOf(a) < TimeOf(b); };
    auto mid = queue_.begin() + ptrdiff_t(sorted);
    if (!std::is_sorted(mid, queue_.end(), less)) std::stable_sort(mid, queue_.end(), less);
    // Only the pending part can be out of order with the fresh events.
    auto first = queue_.begin() + ptrdiff_t(head_);
    if (mid != first && mid != queue_.end() && less(*mid, *(mid - 1)))
      std::inplace_merge(first, mid, queue_.end(), less);
  }

 private:
  std::vector<T> queue_;
  size_t head_ = 0;  // queue_[0, head_) were delivered
};

}  // namespace microscope::record
