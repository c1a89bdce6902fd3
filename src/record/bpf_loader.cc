#include "src/record/bpf_loader.h"

#include <fcntl.h>
#include <linux/types.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/walk.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace microscope::record {

Status BpfFailed(const char* what, int err) {
  return Status::Error(CodeOfErrno(err),
                       std::string(what) + ": " + std::strerror(err < 0 ? -err : err));
}

Status BpfLoadError(const char* what, int err) {
  Status failed = BpfFailed(what, err);
  if (err == -EPERM || err == -EACCES) {
    return Status::Error(StatusCode::kPermissionDenied,
                         failed.message() + " (run as root, or grant CAP_BPF and CAP_PERFMON)");
  }
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    return Status::Error(StatusCode::kUnavailable,
                         failed.message() + " (this kernel has no BTF: /sys/kernel/btf/vmlinux)");
  }
  return failed;
}

Status FollowTgid(bpf_map* targets, int32_t pid) {
  __u32 key = uint32_t(pid);
  __u8 one = 1;
  if (bpf_map__update_elem(targets, &key, sizeof(key), &one, sizeof(one), BPF_ANY) != 0) {
    return BpfFailed("cannot follow the process", errno);
  }
  return OkStatus();
}

Status SizeScratchPerCpu(bpf_map* scratch) {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return BpfFailed("cannot count the CPUs", cpus);
  if (int err = bpf_map__set_max_entries(scratch, uint32_t(cpus)); err != 0) {
    return BpfFailed("cannot size the BPF scratch map", err);
  }
  return OkStatus();
}

Status SharedBpfMaps::Reuse(bpf_object* object) const {
  bpf_map* map;
  bpf_object__for_each_map(map, object) {
    auto it = fds_.find(bpf_map__name(map));
    if (it == fds_.end()) continue;
    if (int err = bpf_map__reuse_fd(map, it->second.get()); err != 0) {
      return BpfFailed("cannot share the runtimes' walker maps", err);
    }
  }
  return OkStatus();
}

Status SharedBpfMaps::Adopt(bpf_object* object) {
  bpf_map* map;
  bpf_object__for_each_map(map, object) {
    const std::string name = bpf_map__name(map);
    if (fds_.contains(name) || std::find(names_.begin(), names_.end(), name) == names_.end())
      continue;
    ScopedFd fd(fcntl(bpf_map__fd(map), F_DUPFD_CLOEXEC, 0));
    if (!fd.valid()) return BpfFailed("cannot keep a runtimes' walker map", errno);
    fds_.emplace(name, std::move(fd));
  }
  return OkStatus();
}

Status SharedBpfMaps::Share(bpf_object* object, std::span<const std::string_view> names) {
  for (std::string_view name : names) {
    if (std::find(names_.begin(), names_.end(), name) == names_.end()) names_.emplace_back(name);
  }
  return Adopt(object);
}

Result<EventTail> SplitEventTail(std::span<const uint8_t> tail, uint32_t walk_size,
                                 uint32_t ustack_size) {
  if (walk_size > tail.size() || ustack_size > tail.size() - walk_size) {
    return Status::Error(StatusCode::kDataLoss,
                         "an event's tail of " + std::to_string(tail.size()) +
                             " bytes cannot hold its walk of " + std::to_string(walk_size) +
                             " bytes and stack of " + std::to_string(ustack_size));
  }
  return EventTail{tail.first(walk_size), tail.subspan(walk_size, ustack_size)};
}

Status ConsumeRing(ring_buffer* ring, int timeout_ms, const char* what) {
  int n = ring_buffer__poll(ring, timeout_ms);
  if (n >= 0 || n == -EINTR) n = ring_buffer__consume(ring);
  if (n < 0 && n != -EINTR) return BpfFailed(what, n);
  return OkStatus();
}

std::vector<uint8_t> ReadPerCpuBytes(bpf_map* map, size_t value_size) {
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return {};
  std::vector<uint8_t> bytes(static_cast<size_t>(cpus) * value_size);
  __u32 zero = 0;
  if (bpf_map__lookup_elem(map, &zero, sizeof(zero), bytes.data(), bytes.size(), 0) != 0) {
    return {};
  }
  return bytes;
}

}  // namespace microscope::record
