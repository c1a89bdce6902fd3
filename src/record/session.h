// A recording: launch a program (or attach to a PID), run the collector and
// the event sources until the target exits, the duration passes or a stop is
// asked for, then process and write the capture. It prints nothing and
// installs no signal handler: the command (src/cli) does both through hooks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "src/record/record_options.h"
#include "src/record/sources.h"

namespace microscope::record {

struct RecordProgress {
  uint64_t elapsed_ns = 0;
  uint64_t samples = 0;
  uint64_t lost = 0;
};

// What was written.
struct RecordSummary {
  uint64_t samples = 0;
  uint64_t syscalls = 0;
  uint64_t off_cpu = 0;  // intervals
  uint64_t threads = 0;
  uint64_t processes = 0;
  uint64_t lost = 0;  // records and samples
};

struct RecordHooks {
  // A part of the recording left out (the kernel refused it): one line.
  std::function<void(const std::string&)> warn = [](const std::string&) {};
  // Called each round of the loop (about every 10 ms).
  std::function<void(const RecordProgress&)> progress = [](const RecordProgress&) {};
  // The signal a stop was asked for with (SIGINT, SIGTERM, SIGHUP); 0 until then.
  std::function<int()> stop_signal = [] { return 0; };
  // The capture is written at `path` (before waiting for a launched program
  // to end).
  std::function<void(const std::string& path, const RecordSummary&)> written =
      [](const std::string&, const RecordSummary&) {};
  // SIGUSR1s received so far: each asks for a snapshot.
  std::function<uint64_t()> snapshot_signals = [] { return 0; };
  // A part of the running recording (a snapshot or a segment) is written, or
  // could not be: called on the thread that writes parts.
  std::function<void(const std::string& path, const Status&, const RecordSummary&)> part_written =
      [](const std::string&, const Status&, const RecordSummary&) {};
};

// Ring data pages per CPU when -m is not given (record --help says them).
uint32_t DefaultRingPages(const RecordOptions& options);

// Records and writes the capture to options.output, with those of
// `sources` the options ask for. Returns the exit
// status `record` should end with: the launched program's, as a shell
// reports it, or 0 for an attach.
Result<int> RunRecord(const RecordOptions& options, std::span<const SourceKind> sources,
                      const RecordHooks& hooks);

}  // namespace microscope::record
