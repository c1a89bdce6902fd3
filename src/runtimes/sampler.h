// Loads bpf/sampler.bpf.c (the only code that includes its skeleton): the
// one program the recorder's own perf events run at each sample (an event
// runs one program), which walks the runtime each process was laid out for
// (CPython, V8) and writes the walk into the sample's ring. Each runtime's
// event source lays its processes out through its own walker
// (src/runtimes/python/walker.h, src/runtimes/node/walker.h); the first one
// that needs the program loads it and attaches it to the collector's
// events, and the others share it (SourceContext::runtime_sampler).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::runtimes {

class Sampler {
 public:
  // The recording's program (kept in `*shared`): loaded, attached to the
  // collector's perf events and following `target` on the first call,
  // shared afterwards.
  // Its maps of runtimes' layouts are `maps`' (bpf_loader.h); each walk
  // keeps at most `walk_frames` frames (bpf/walk.h).
  static Result<std::shared_ptr<Sampler>> Attach(record::Collector* collector, uint32_t target,
                                                 uint32_t walk_frames, record::SharedBpfMaps* maps,
                                                 std::shared_ptr<Sampler>* shared);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // A runtime walker's map (its NAME_walk.bpf.h), by name; -1 when the
  // program has none of that name.
  int map_fd(const char* name) const;

  // Follows process `pid` and the processes it starts: their execs are
  // reported to every listener (DrainExecs), readable on wait_fd().
  Status Follow(uint32_t pid);
  int wait_fd() const;
  // Each runtime hears of every exec (a process that may now run its
  // runtime, or no longer does). A held one is stopped until the runtime
  // whose interpreter it runs lays it out and continues it (SIGCONT).
  struct Exec {
    uint32_t pid = 0;
    bool held = false;
    // Why a process a runtime wanted held was not (runtime_exec_event's).
    int32_t unheld = 0;
  };
  void AddExecListener(std::function<void(const Exec&)> listener);
  // Takes the execs reported since and tells every listener.
  Status DrainExecs();

  // Hands `take` each record written since the last call to the ring map
  // `name` of a runtime's walker (the copies of what names its frames), in
  // ring order.
  using RecordTaker = std::function<void(std::span<const uint8_t>)>;
  Status DrainRing(const char* name, const RecordTaker& take);

  // Attaches the walkers' uprobe `program` at file offset `offset` of the
  // file open as `fd` (the file the caller read the offset from: never a
  // path looked up again), in every process that runs it; the program
  // itself tells only of the processes its runtime laid out. Kept until
  // the sampler ends.
  Status AttachUprobe(const char* program, int fd, uint64_t offset);

  // The count in a walker's one-entry array map `name` (0: no such map).
  uint64_t Count(const char* name) const;

  // Walks (of any runtime) that did not fit in their ring.
  uint64_t Lost() const;

  struct State;  // libbpf's objects; defined in the .cc only

 private:
  explicit Sampler(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The file a launched program runs (its command's first word, looked up in
// PATH), or the attached process's executable; "" when not found.
std::string ProgramPath(const record::SourceContext& context);

}  // namespace microscope::runtimes
