// Steps the BPF loaders (bpf_offcpu.cc, bpf_syscalls.cc) share: errors that
// say what to change, following processes, sizing the per-CPU scratch map,
// reading the ring and the per-CPU counters. Only .cc files include libbpf.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"
#include "src/record/source_events.h"

struct runtime_walk;  // bpf/walk.h

struct bpf_map;      // libbpf's
struct bpf_object;   // libbpf's
struct ring_buffer;  // libbpf's

namespace microscope::record {

// `what` failed with `err` (an errno, either sign).
Status BpfFailed(const char* what, int err);

// A BPF object the kernel would not load (`err`: libbpf's negative errno),
// with what to change: privileges, or a kernel with BTF.
Status BpfLoadError(const char* what, int err);

// Adds a process (tgid) to a BPF object's `targets` map (bpf/targets.bpf.h).
Status FollowTgid(::bpf_map* targets, int32_t pid);

// Gives an ARRAY map one slot per possible CPU (a scratch event per CPU,
// too large for a per-CPU array's values), before the object is loaded.
Status SizeScratchPerCpu(::bpf_map* scratch);

// The maps the runtimes' BPF walkers read (their processes' layouts: the
// names each runtime's SourceKind lists), one of each per recording, shared
// by every BPF object that walks (the runtimes' sampler, off-CPU time,
// system calls), whatever order they load in: the first object loaded with
// a map of a shared name creates it, the others use it. Owned by the
// recording; used on its thread only.
class SharedBpfMaps {
 public:
  explicit SharedBpfMaps(std::vector<std::string> names) : names_(std::move(names)) {}
  // Before `object` loads: its maps of a shared name that a loaded object
  // made become those.
  Status Reuse(::bpf_object* object) const;
  // After it loaded: its maps of a shared name not made yet are kept for
  // the objects loaded next.
  Status Adopt(::bpf_object* object);
  // After it loaded: `object`'s maps named `names` are shared from now on
  // (the stack copier's stack_ends and stack_vmas).
  Status Share(::bpf_object* object, std::span<const std::string_view> names);
  // Whether a loaded object's map named `name` is shared.
  bool Has(std::string_view name) const { return fds_.contains(std::string(name)); }

 private:
  std::vector<std::string> names_;
  std::map<std::string, ScopedFd> fds_;
};

// Whether the stack copier shared what it learned of each thread's stack
// (StackCopier::ShareExtents): the tracers' copies are then sized as the
// samples' are (bpf/stack_extent.bpf.h).
inline bool SizedByWalks(const SharedBpfMaps* maps) {
  return maps != nullptr && maps->Has("stack_ends");
}

// An event's tail (bpf/stack_copy.h) split into the runtime walk it carries
// (the bytes of its record, bpf/walk.h; empty: none) and its user stack;
// refused when the sizes the event states do not fit in what arrived.
struct EventTail {
  std::span<const uint8_t> walk;
  std::span<const uint8_t> user_stack;
};
Result<EventTail> SplitEventTail(std::span<const uint8_t> tail, uint32_t walk_size,
                                 uint32_t ustack_size);

// Waits up to `timeout_ms` for `ring`, then takes every event there: the
// programs wake the reader only once a batch has gathered, so whatever is
// waiting is taken whether or not a wakeup came.
Status ConsumeRing(::ring_buffer* ring, int timeout_ms, const char* what);

// Slot 0 of a per-CPU array map: `value_size` bytes per possible CPU, back
// to back; empty when they cannot be read.
std::vector<uint8_t> ReadPerCpuBytes(::bpf_map* map, size_t value_size);

// The same as values of T (plain counters), one per possible CPU.
template <typename T>
std::vector<T> ReadPerCpu(::bpf_map* map) {
  std::vector<uint8_t> bytes = ReadPerCpuBytes(map, sizeof(T));
  std::vector<T> values(bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

}  // namespace microscope::record
