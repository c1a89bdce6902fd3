#include "src/record/exit_source.h"

#include <linux/types.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "bpf/exits.h"
#include "bpf/exits.skel.h"
#include "src/record/bpf_loader.h"
#include "src/record/launch.h"

namespace microscope::record {
namespace {

static_assert(sizeof(exit_event) == 16, "bpf/exits.h layout");

// The BPF objects; the only code that includes exits.skel.h.
struct ExitBpf {
  exits_bpf* skel = nullptr;
  ring_buffer* ring = nullptr;
  ExitBpf() = default;
  ExitBpf(const ExitBpf&) = delete;
  ExitBpf& operator=(const ExitBpf&) = delete;
  ~ExitBpf() {
    if (ring != nullptr) ring_buffer__free(ring);
    if (skel != nullptr) exits_bpf__destroy(skel);
  }
};

class ExitSource final : public QueuedSource<exit_event> {
 public:
  explicit ExitSource(std::unique_ptr<ExitBpf> bpf) : bpf_(std::move(bpf)) {}

  Status Attach(int32_t target) {
    RETURN_IF_ERROR(FollowTgid(bpf_->skel->maps.targets, target));
    if (int err = exits_bpf__attach(bpf_->skel); err != 0) {
      return BpfFailed("cannot attach the process-exit BPF program", err);
    }
    bpf_->ring = ring_buffer__new(bpf_map__fd(bpf_->skel->maps.events), OnEvent, this, nullptr);
    if (bpf_->ring == nullptr) return BpfFailed("cannot read the process-exit ring buffer", errno);
    return OkStatus();
  }

  int wait_fd() const override { return ring_buffer__epoll_fd(bpf_->ring); }

  void Poll(const PollWindow& w, RowSink* sink) override {
    Status read = ConsumeRing(bpf_->ring, 0, "reading the process-exit ring buffer");
    if (!read.ok()) sink->CountProblem("process exits not read", read.message());
    Take(&fresh_, [&](const exit_event& e) { return e.time_ns < w.end || w.final; });
  }

  void Deliver(size_t i, RowSink* sink) override {
    sink->SetExitStatus(at(i).pid, ExitStatusForShell(at(i).exit_code));
  }

  void Finish(RowSink* sink, capture::Settings* settings) override {
    uint64_t lost = 0;
    for (uint64_t v : ReadPerCpu<uint64_t>(bpf_->skel->maps.lost)) lost += v;
    if (lost > 0) {
      sink->CountProblem("process exits lost (BPF ring buffer full)",
                         std::to_string(lost) + " exits");
      settings->lost_records += lost;
    }
    bpf_.reset();
  }

 private:
  static int OnEvent(void* ctx, void* data, size_t size) {
    if (size < sizeof(exit_event)) return 0;
    exit_event e;
    std::memcpy(&e, data, sizeof(e));
    static_cast<ExitSource*>(ctx)->fresh_.push_back(e);
    return 0;
  }
  uint64_t TimeOf(const exit_event& e) const override { return e.time_ns; }

  std::unique_ptr<ExitBpf> bpf_;
  std::vector<exit_event> fresh_;
};

}  // namespace

Result<std::unique_ptr<EventSource>> StartExitSource(const SourceContext& context) {
  auto bpf = std::make_unique<ExitBpf>();
  bpf->skel = exits_bpf__open();
  if (bpf->skel == nullptr) return BpfFailed("cannot open the process-exit BPF program", errno);
  if (int err = exits_bpf__load(bpf->skel); err != 0) {
    return BpfLoadError("the kernel refused the process-exit BPF program", err);
  }
  auto source = std::make_unique<ExitSource>(std::move(bpf));
  RETURN_IF_ERROR(source->Attach(context.target));
  context.settings->SetSource(std::string(capture::kExitSource), "on");
  return std::unique_ptr<EventSource>(std::move(source));
}

}  // namespace microscope::record
