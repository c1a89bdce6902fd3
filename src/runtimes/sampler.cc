#include "src/runtimes/sampler.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>

#include <unistd.h>

#include "bpf/sampler.skel.h"
#include "bpf/walk.h"
#include "src/record/bpf_loader.h"
#include "src/record/collector.h"

namespace microscope::runtimes {

using record::BpfFailed;

struct Sampler::State {
  sampler_bpf* skel = nullptr;
  ring_buffer* execs = nullptr;
  std::vector<Sampler::Exec> taken;  // by the ring's callback, during a drain
  std::vector<std::function<void(const Sampler::Exec&)>> listeners;
  // The walkers' own rings (DrainRing), opened at their first drain.
  std::map<std::string, ring_buffer*, std::less<>> rings;
  const Sampler::RecordTaker* taking = nullptr;
  std::vector<bpf_link*> uprobes;  // AttachUprobe's
  ~State() {
    for (bpf_link* link : uprobes) bpf_link__destroy(link);
    for (auto& [name, ring] : rings) ring_buffer__free(ring);
    if (execs != nullptr) ring_buffer__free(execs);
    if (skel != nullptr) sampler_bpf__destroy(skel);
  }
};

namespace {

int OnExec(void* ctx, void* data, size_t size) {
  auto* state = static_cast<Sampler::State*>(ctx);
  runtime_exec_event e;
  if (size < sizeof(e)) return 0;
  std::memcpy(&e, data, sizeof(e));
  state->taken.push_back({e.tgid, e.held != 0, e.unheld});
  return 0;
}

Result<std::unique_ptr<Sampler::State>> Load(uint32_t walk_frames, record::SharedBpfMaps* maps) {
  auto state = std::make_unique<Sampler::State>();
  state->skel = sampler_bpf__open();
  if (state->skel == nullptr) return BpfFailed("cannot open the runtime walkers", errno);
  int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return BpfFailed("cannot count the CPUs", cpus);
  bpf_map__set_max_entries(state->skel->maps.walk_out, uint32_t(cpus));
  RETURN_IF_ERROR(record::SizeScratchPerCpu(state->skel->maps.walk_scratch));
  state->skel->rodata->walk_max_frames = walk_frames;
  state->skel->rodata->recorder_tgid = uint32_t(getpid());
  if (maps != nullptr) RETURN_IF_ERROR(maps->Reuse(state->skel->obj));
  if (int err = sampler_bpf__load(state->skel); err != 0) {
    return record::BpfLoadError("the kernel refused the runtime walkers", err);
  }
  if (maps != nullptr) RETURN_IF_ERROR(maps->Adopt(state->skel->obj));
  if (int err = sampler_bpf__attach(state->skel); err != 0) {
    return BpfFailed("cannot attach the runtime walkers' process trackers", err);
  }
  state->execs =
      ring_buffer__new(bpf_map__fd(state->skel->maps.execs), OnExec, state.get(), nullptr);
  if (state->execs == nullptr)
    return BpfFailed("cannot read the runtime walkers' exec ring", errno);
  return state;
}

}  // namespace

Sampler::Sampler(std::unique_ptr<State> state) : state_(std::move(state)) {}
Sampler::~Sampler() = default;

Result<std::shared_ptr<Sampler>> Sampler::Attach(record::Collector* collector, uint32_t target,
                                                 uint32_t walk_frames, record::SharedBpfMaps* maps,
                                                 std::shared_ptr<Sampler>* shared) {
  if (shared != nullptr && *shared != nullptr) return *shared;
  if (collector == nullptr) return Status::Error("no perf events to walk on");
  ASSIGN_OR_RETURN(std::unique_ptr<State> state, Load(walk_frames, maps));
  std::shared_ptr<Sampler> sampler(new Sampler(std::move(state)));
  ASSIGN_OR_RETURN(auto outputs, collector->OpenOutputEvents());
  for (auto [cpu, fd] : outputs) {
    __u32 key = uint32_t(cpu), value = uint32_t(fd);
    if (bpf_map__update_elem(sampler->state_->skel->maps.walk_out, &key, sizeof(key), &value,
                             sizeof(value), BPF_ANY) != 0) {
      return BpfFailed("cannot give the runtime walkers their output events", errno);
    }
  }
  RETURN_IF_ERROR(collector->AttachProgram(
      bpf_program__fd(sampler->state_->skel->progs.walk_runtimes_at_sample)));
  RETURN_IF_ERROR(sampler->Follow(target));
  if (shared != nullptr) *shared = sampler;
  return sampler;
}

int Sampler::map_fd(const char* name) const {
  const bpf_map* map = bpf_object__find_map_by_name(state_->skel->obj, name);
  return map != nullptr ? bpf_map__fd(map) : -1;
}

Status Sampler::Follow(uint32_t pid) {
  return record::FollowTgid(state_->skel->maps.targets, int32_t(pid));
}

int Sampler::wait_fd() const {
  return ring_buffer__epoll_fd(state_->execs);
}

void Sampler::AddExecListener(std::function<void(const Exec&)> listener) {
  state_->listeners.push_back(std::move(listener));
}

Status Sampler::DrainExecs() {
  Status read = record::ConsumeRing(state_->execs, 0, "reading the runtime walkers' exec ring");
  std::vector<Exec> execs = std::move(state_->taken);
  state_->taken.clear();
  for (const Exec& e : execs) {
    for (auto& listener : state_->listeners) listener(e);
  }
  return read;
}

Status Sampler::DrainRing(const char* name, const RecordTaker& take) {
  auto it = state_->rings.find(std::string_view(name));
  if (it == state_->rings.end()) {
    auto on_record = [](void* ctx, void* data, size_t size) {
      auto* state = static_cast<State*>(ctx);
      if (state->taking != nullptr) (*state->taking)({static_cast<const uint8_t*>(data), size});
      return 0;
    };
    ring_buffer* ring = ring_buffer__new(map_fd(name), on_record, state_.get(), nullptr);
    if (ring == nullptr)
      return BpfFailed((std::string("cannot read the ring ") + name).c_str(), errno);
    it = state_->rings.emplace(name, ring).first;
  }
  state_->taking = &take;
  const int n = ring_buffer__consume(it->second);
  state_->taking = nullptr;
  if (n < 0 && n != -EINTR)
    return BpfFailed((std::string("cannot read the ring ") + name).c_str(), n);
  return OkStatus();
}

Status Sampler::AttachUprobe(const char* program, int fd, uint64_t offset) {
  bpf_program* prog = bpf_object__find_program_by_name(state_->skel->obj, program);
  if (prog == nullptr) return Status::Error(std::string("no walker program ") + program);
  // The kernel resolves the path to the very file open as fd.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  LIBBPF_OPTS(bpf_uprobe_opts, opts);
  bpf_link* link = bpf_program__attach_uprobe_opts(prog, -1, path.c_str(), offset, &opts);
  if (link == nullptr) {
    return BpfFailed(
        (std::string("cannot attach ") + program + " at offset " + std::to_string(offset)).c_str(),
        errno);
  }
  state_->uprobes.push_back(link);
  return OkStatus();
}

uint64_t Sampler::Count(const char* name) const {
  const int fd = map_fd(name);
  __u32 key = 0;
  __u64 value = 0;
  if (fd < 0 || bpf_map_lookup_elem(fd, &key, &value) != 0) return 0;
  return value;
}

uint64_t Sampler::Lost() const {
  uint64_t total = 0;
  for (uint64_t n : record::ReadPerCpu<uint64_t>(state_->skel->maps.lost)) total += n;
  return total;
}

std::string ProgramPath(const record::SourceContext& context) {
  if (!context.launch) {
    char buf[4096];
    const std::string link = "/proc/" + std::to_string(context.target) + "/exe";
    const ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
    // Read through /proc/PID/exe itself: the process's root may differ.
    return n > 0 ? link : std::string();
  }
  const auto& command = context.options.command;
  if (command.empty()) return "";
  const std::string& path = command[0];
  if (path.find('/') != std::string::npos) return path;
  const char* env = getenv("PATH");
  std::istringstream dirs(env ? env : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (access((dir + "/" + path).c_str(), X_OK) == 0) return dir + "/" + path;
  }
  return "";
}

}  // namespace microscope::runtimes
