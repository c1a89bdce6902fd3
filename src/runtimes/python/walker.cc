#include "src/runtimes/python/walker.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <gelf.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>

#include "src/record/bpf_loader.h"
#include "src/runtimes/python/python.h"
#include "src/symbols/elf_handle.h"

namespace microscope::runtimes::python {

using record::BpfFailed;

namespace {

uint32_t Offset(uint64_t offset) {
  return offset == Layout::kAbsent ? MICROSCOPE_PY_ABSENT : uint32_t(offset);
}

}  // namespace

Result<py_process> ProcessOffsets(const Layout& l, const ProcessWalk& where) {
  py_process p{};
  p.runtime = where.runtime;
  p.pidns_dev = where.pidns_dev;
  p.pidns_ino = where.pidns_ino;
  p.runtime_interpreters_head = Offset(l.runtime_interpreters_head);
  p.interp_next = Offset(l.interp_next);
  p.interp_threads_head = Offset(l.interp_threads_head);
  p.thread_next = Offset(l.thread_next);
  p.thread_native_id = Offset(l.thread_native_id);
  p.thread_current_frame = Offset(l.thread_current_frame);
  p.thread_cframe = Offset(l.thread_cframe);
  p.cframe_current_frame = Offset(l.cframe_current_frame);
  p.frame_previous = Offset(l.frame_previous);
  p.frame_executable = Offset(l.frame_executable);
  p.frame_instr_ptr = Offset(l.frame_instr_ptr);
  p.frame_owner = Offset(l.frame_owner);
  p.frame_is_entry = Offset(l.frame_is_entry);
  p.code_lo = uint32_t(std::min({l.code_firstlineno, l.code_filename, l.code_qualname}));
  p.code_firstlineno = Offset(l.code_firstlineno);
  p.code_filename = Offset(l.code_filename);
  p.code_qualname = Offset(l.code_qualname);
  p.code_adaptive = Offset(l.code_adaptive);
  std::tie(p.owner_cstack, p.owner_interpreter) = NonPythonOwners(l.minor);
  p.thread_interp = Offset(l.thread_interp);
  if (l.runtime_gil_holder != Layout::kAbsent) {
    p.gil = MICROSCOPE_PY_GIL_RUNTIME;
    p.gil_holder = Offset(l.runtime_gil_holder);
  } else if (l.interp_ceval_gil != Layout::kAbsent) {
    p.gil = MICROSCOPE_PY_GIL_INTERP_PTR;
    p.gil_pointer = Offset(l.interp_ceval_gil);
    p.gil_holder = Offset(l.gil_last_holder);
    p.gil_locked = Offset(l.gil_locked);
  } else if (l.interp_gil_holder != Layout::kAbsent && l.interp_gil_locked != Layout::kAbsent) {
    p.gil = MICROSCOPE_PY_GIL_INTERP;
    p.gil_holder = Offset(l.interp_gil_holder);
    p.gil_locked = Offset(l.interp_gil_locked);
  }
  // Code objects are copied (py_code_snapshot) when the fields user space
  // reads lie in the first bytes copied.
  p.code_linetable = MICROSCOPE_PY_ABSENT;
  if (std::max(
          {l.object_type, l.code_firstlineno, l.code_filename, l.code_qualname, l.code_linetable}) +
          8 <=
      MICROSCOPE_PY_SNAP_CODE) {
    p.code_linetable = Offset(l.code_linetable);
  }
  // The walk reads a frame's fields from one chunk at its start, and a code
  // object's from one chunk at code_lo: every field must lie inside.
  const uint64_t frame_end =
      std::max({l.frame_previous, l.frame_executable, l.frame_instr_ptr}) + 8;
  const uint64_t code_end = std::max({l.code_firstlineno, l.code_filename, l.code_qualname}) + 8;
  if (frame_end > MICROSCOPE_PY_CHUNK || l.frame_owner >= MICROSCOPE_PY_CHUNK ||
      (l.frame_is_entry != Layout::kAbsent && l.frame_is_entry >= MICROSCOPE_PY_CHUNK) ||
      code_end - p.code_lo > MICROSCOPE_PY_CHUNK ||
      (l.thread_current_frame == Layout::kAbsent && l.thread_cframe == Layout::kAbsent)) {
    return Status::Error(StatusCode::kUnavailable,
                         "CPython " + l.Version() +
                             " keeps its frame or code fields where the walker does not read");
  }
  return p;
}

Status Walker::SetProcess(uint32_t pid, const Layout& l, const ProcessWalk& where) {
  ASSIGN_OR_RETURN(py_process p, ProcessOffsets(l, where));
  __u32 key = pid;
  if (bpf_map_update_elem(sampler_->map_fd("py_processes"), &key, &p, BPF_ANY) != 0) {
    return BpfFailed("cannot lay out a Python process for the walker", errno);
  }
  return OkStatus();
}

bool Walker::Walks(uint32_t pid) const {
  __u32 key = pid;
  py_process p;
  return bpf_map_lookup_elem(sampler_->map_fd("py_processes"), &key, &p) == 0;
}

Status Walker::SetThreads(uint32_t pid, std::span<const Thread> threads) {
  const int procs = sampler_->map_fd("py_processes");
  __u32 key = pid;
  py_process p;
  if (bpf_map_lookup_elem(procs, &key, &p) != 0) return OkStatus();
  ++p.generation;
  for (const Thread& t : threads) {
    py_thread v{};
    v.tstate = t.tstate;
    v.native_id = t.native_id;
    v.generation = p.generation;
    __u32 tid = t.tid;
    if (bpf_map_update_elem(sampler_->map_fd("py_threads"), &tid, &v, BPF_ANY) != 0) {
      return BpfFailed("cannot record a Python thread for the walker", errno);
    }
  }
  // BPF_EXIST: a process forgotten meanwhile (exec, exit) stays forgotten.
  if (bpf_map_update_elem(procs, &key, &p, BPF_EXIST) != 0 && errno != ENOENT) {
    return BpfFailed("cannot update a Python process for the walker", errno);
  }
  return OkStatus();
}

namespace {

// The least link-time address of the file's executable segments: what an
// exec's mm->start_code is, less the load bias.
Result<uint64_t> TextVaddr(const std::string& path) {
  ASSIGN_OR_RETURN(symbols::ElfFile file, symbols::OpenElfFile(path));
  size_t count = 0;
  if (elf_getphdrnum(file.elf.get(), &count) != 0) {
    return Status::Error(StatusCode::kDataLoss, path + ": no program headers");
  }
  std::optional<uint64_t> least;
  for (size_t i = 0; i < count; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(file.elf.get(), int(i), &ph) == nullptr) continue;
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && (!least || ph.p_vaddr < *least))
      least = ph.p_vaddr;
  }
  if (!least) return Status::Error(StatusCode::kDataLoss, path + ": no executable segment");
  return *least;
}

}  // namespace

Status Walker::SetImage(const std::string& path, const Layout& l, uint64_t runtime) {
  ASSIGN_OR_RETURN(py_process p, ProcessOffsets(l, ProcessWalk{.runtime = runtime}));
  ASSIGN_OR_RETURN(uint64_t text, TextVaddr(path));
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return Status::Error(StatusCode::kNotFound, path + ": not found");
  // The kernel's device numbers: major << 20 | minor.
  py_image key{(uint64_t(major(st.st_dev)) << 20) | minor(st.st_dev), uint64_t(st.st_ino)};
  py_image_layout value{p, text};
  if (bpf_map_update_elem(sampler_->map_fd("py_images"), &key, &value, BPF_ANY) != 0) {
    return BpfFailed("cannot give the walker a Python image", errno);
  }
  return OkStatus();
}

Status Walker::HoldUnknownExecs() {
  const uint32_t zero = 0, on = 1;
  if (bpf_map_update_elem(sampler_->map_fd("py_hold"), &zero, &on, BPF_ANY) != 0)
    return BpfFailed("cannot hold the execs of Python interpreters", errno);
  return OkStatus();
}

Status Walker::DrainSnapshots(const SnapshotTaker& take) {
  return sampler_->DrainRing("py_snaps", [&](std::span<const uint8_t> record) {
    if (record.size() < sizeof(py_code_snapshot)) return;
    py_code_snapshot s;
    std::memcpy(&s, record.data(), sizeof(s));
    take(s);
  });
}

void Walker::ForgetProcess(uint32_t pid) {
  __u32 key = pid;
  bpf_map_delete_elem(sampler_->map_fd("py_processes"), &key);
}

}  // namespace microscope::runtimes::python
