#include "src/runtimes/python/walker.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "bpf/python.h"
#include "bpf/python.skel.h"
#include "src/record/bpf_loader.h"

namespace microscope::runtimes::python {

using record::BpfFailed;

struct Walker::State {
  python_bpf* skel = nullptr;
  ring_buffer* execs = nullptr;
  std::vector<uint32_t>* sink = nullptr;
  ~State() {
    if (execs != nullptr) ring_buffer__free(execs);
    if (skel != nullptr) python_bpf__destroy(skel);
  }
};

namespace {

int OnExec(void* ctx, void* data, size_t size) {
  auto* state = static_cast<Walker::State*>(ctx);
  uint32_t pid;
  if (state->sink == nullptr || size < sizeof(pid)) return 0;
  std::memcpy(&pid, data, sizeof(pid));
  state->sink->push_back(pid);
  return 0;
}

}  // namespace

Walker::Walker(std::unique_ptr<State> state) : state_(std::move(state)) {}
Walker::~Walker() = default;

Result<std::unique_ptr<Walker>> Walker::Load() {
  auto state = std::make_unique<State>();
  libbpf_set_print(nullptr);
  state->skel = python_bpf__open();
  if (state->skel == nullptr) return BpfFailed("cannot open the Python walker", errno);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return BpfFailed("cannot count the CPUs", cpus);
  bpf_map__set_max_entries(state->skel->maps.py_out, uint32_t(cpus));
  if (int err = python_bpf__load(state->skel); err != 0) {
    return record::BpfLoadError("the kernel refused the Python walker", err);
  }
  if (int err = python_bpf__attach(state->skel); err != 0) {
    return BpfFailed("cannot attach the Python walker's process trackers", err);
  }
  state->execs =
      ring_buffer__new(bpf_map__fd(state->skel->maps.py_execs), OnExec, state.get(), nullptr);
  if (state->execs == nullptr) return BpfFailed("cannot read the Python walker's exec ring", errno);
  return std::unique_ptr<Walker>(new Walker(std::move(state)));
}

int Walker::program_fd() const {
  return bpf_program__fd(state_->skel->progs.walk_python);
}

Status Walker::SetOutputs(std::span<const std::pair<int, int>> outputs) {
  for (auto [cpu, fd] : outputs) {
    __u32 key = uint32_t(cpu), value = uint32_t(fd);
    if (bpf_map__update_elem(state_->skel->maps.py_out, &key, sizeof(key), &value, sizeof(value),
                             BPF_ANY) != 0) {
      return BpfFailed("cannot give the Python walker its output events", errno);
    }
  }
  return OkStatus();
}

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
  if (bpf_map__update_elem(state_->skel->maps.py_processes, &key, sizeof(key), &p, sizeof(p),
                           BPF_ANY) != 0) {
    return BpfFailed("cannot lay out a Python process for the walker", errno);
  }
  return OkStatus();
}

Status Walker::SetThreads(uint32_t pid, std::span<const Thread> threads) {
  bpf_map* procs = state_->skel->maps.py_processes;
  __u32 key = pid;
  py_process p;
  if (bpf_map__lookup_elem(procs, &key, sizeof(key), &p, sizeof(p), 0) != 0) return OkStatus();
  ++p.generation;
  for (const Thread& t : threads) {
    py_thread v{};
    v.tstate = t.tstate;
    v.native_id = t.native_id;
    v.generation = p.generation;
    __u32 tid = t.tid;
    if (bpf_map__update_elem(state_->skel->maps.py_threads, &tid, sizeof(tid), &v, sizeof(v),
                             BPF_ANY) != 0) {
      return BpfFailed("cannot record a Python thread for the walker", errno);
    }
  }
  // BPF_EXIST: a process forgotten meanwhile (exec, exit) stays forgotten.
  if (bpf_map__update_elem(procs, &key, sizeof(key), &p, sizeof(p), BPF_EXIST) != 0 &&
      errno != ENOENT) {
    return BpfFailed("cannot update a Python process for the walker", errno);
  }
  return OkStatus();
}

void Walker::ForgetProcess(uint32_t pid) {
  __u32 key = pid;
  bpf_map__delete_elem(state_->skel->maps.py_processes, &key, sizeof(key), 0);
}

Status Walker::Follow(uint32_t pid) {
  return record::FollowTgid(state_->skel->maps.targets, int32_t(pid));
}

int Walker::wait_fd() const {
  return ring_buffer__epoll_fd(state_->execs);
}

Status Walker::TakeExecs(std::vector<uint32_t>* pids) {
  state_->sink = pids;
  Status read = record::ConsumeRing(state_->execs, 0, "reading the Python walker's exec ring");
  state_->sink = nullptr;
  return read;
}

record::RuntimeMaps Walker::maps() const {
  return {bpf_map__fd(state_->skel->maps.py_processes), bpf_map__fd(state_->skel->maps.py_threads)};
}

uint64_t Walker::Lost() const {
  uint64_t total = 0;
  for (uint64_t n : record::ReadPerCpu<uint64_t>(state_->skel->maps.lost)) total += n;
  return total;
}

}  // namespace microscope::runtimes::python
