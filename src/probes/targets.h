// What the probe source keeps of the programs it reads: one Target per
// module's control block in a process (the sites it switched on, its
// rings), the sites as the capture will have them, the events it queues;
// and the writes it makes into a target (its sites' enabled flags).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture/capture.h"

namespace microscope::probes {

using capture::ProbeKind;
using capture::ProbeOp;

// Small, since the queue moves them: a label's text is kept aside.
struct ProbeEvent {
  uint64_t time = 0;
  uint32_t pid = 0;
  uint32_t tid = 0;
  uint32_t site = 0;  // sites_ index
  ProbeOp op = ProbeOp::kMark;
  uint32_t text = 0;  // a label's value: texts_ index
  double value = 0;
};

// A site as the capture will have it; copies of it (inlined code, several
// processes) map to one.
struct Site {
  ProbeKind kind;
  std::string name;
  std::string file;
  uint32_t line = 0;
  capture::ModuleId module = capture::kNone;
  capture::ProbeSiteId id = capture::kNone;  // in the capture, once delivered
};

struct RingState {
  uint32_t tid = 0;
  uint64_t dropped = 0;
};

// One module's control block in one process.
struct Target {
  uint32_t pid = 0;
  capture::ModuleId module = capture::kNone;
  std::string path;
  uint64_t ctl = 0;  // its address in the process
  uint64_t bias = 0;
  bool attached = false;
  bool dead = false;  // refused, or no longer readable
  int tries = 0;
  std::vector<uint64_t> enabled;                   // the enabled flags this recorder set
  std::unordered_map<uint64_t, uint32_t> site_at;  // a site's address -> sites_ index
  uint32_t runtime_read = 0;                       // run-time slots read
  std::map<uint64_t, RingState> rings;
  uint64_t threads_refused = 0;
};

// Another process's memory, written in place (read: record::ProcessMemory).
bool WriteAt(uint32_t pid, uint64_t address, const void* data, size_t size);
// Sets the byte at each address to `value` (a site's enabled flag).
void WriteBytes(uint32_t pid, const std::vector<uint64_t>& addresses, uint8_t value);
// A ring record's op as the capture has it.
ProbeOp OpOf(uint8_t op);

}  // namespace microscope::probes
