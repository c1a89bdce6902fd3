#include "src/record/bpf_gate.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "bpf/gate.skel.h"
#include "src/record/bpf_loader.h"

namespace microscope::record {

struct SampleGate::State {
  gate_bpf* skel = nullptr;
  ~State() {
    if (skel != nullptr) gate_bpf__destroy(skel);
  }
};

namespace {
struct GateConfig {  // bpf/gate.bpf.c
  uint32_t keep_one_in;
  uint32_t walks;
};
struct GateCount {
  uint64_t kept;
  uint64_t dropped;
};
}  // namespace

Result<std::unique_ptr<SampleGate>> SampleGate::Load() {
  auto state = std::make_unique<State>();
  state->skel = gate_bpf__open();
  if (state->skel == nullptr) return BpfFailed("cannot open the sample gate BPF program", errno);
  if (int err = gate_bpf__load(state->skel); err != 0) {
    return BpfLoadError("the sample gate BPF program", err);
  }
  std::unique_ptr<SampleGate> gate(new SampleGate(std::move(state)));
  RETURN_IF_ERROR(gate->Set(1, true));
  return gate;
}

SampleGate::SampleGate(std::unique_ptr<State> state) : state_(std::move(state)) {}
SampleGate::~SampleGate() = default;

int SampleGate::program_fd() const {
  return bpf_program__fd(state_->skel->progs.gate);
}

Status SampleGate::Chain(int fd) {
  uint32_t zero = 0, value = uint32_t(fd);
  if (bpf_map__update_elem(state_->skel->maps.gate_next, &zero, sizeof(zero), &value, sizeof(value),
                           BPF_ANY) != 0) {
    return BpfFailed("cannot chain the runtime walker behind the sample gate", errno);
  }
  return OkStatus();
}

Status SampleGate::Set(uint32_t keep_one_in, bool walks) {
  uint32_t zero = 0;
  GateConfig c{keep_one_in, walks ? 1u : 0u};
  if (bpf_map__update_elem(state_->skel->maps.gate_config, &zero, sizeof(zero), &c, sizeof(c),
                           BPF_ANY) != 0) {
    return BpfFailed("cannot set the sample gate", errno);
  }
  return OkStatus();
}

SampleGate::Counts SampleGate::counts() const {
  Counts out;
  for (const GateCount& c : ReadPerCpu<GateCount>(state_->skel->maps.gate_counts)) {
    out.kept += c.kept;
    out.dropped += c.dropped;
  }
  return out;
}

}  // namespace microscope::record
