#include "src/record/bpf_loader.h"

#include <linux/types.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/python.h"

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

Status ShareRuntimeMaps(bpf_map* py_processes, bpf_map* py_threads, const RuntimeMaps& maps) {
  for (auto [map, fd] : {std::pair{py_processes, maps.python_processes},
                         std::pair{py_threads, maps.python_threads}}) {
    if (fd < 0) continue;
    if (int err = bpf_map__reuse_fd(map, fd); err != 0) {
      return BpfFailed("cannot share the Python walker's maps", err);
    }
  }
  return OkStatus();
}

std::vector<uint8_t> WalkRecord(const py_walk& w) {
  if (w.magic != MICROSCOPE_PY_MAGIC) return {};
  size_t frames = std::min<size_t>(w.nframes, MICROSCOPE_PY_MAX_FRAMES);
  const auto* bytes = reinterpret_cast<const uint8_t*>(&w);
  return std::vector<uint8_t>(bytes, bytes + MICROSCOPE_PY_WALK_FIXED + frames * sizeof(py_frame));
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
