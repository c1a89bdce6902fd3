#include "src/record/budget_source.h"

#include <bpf/bpf.h>
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "base/clock.h"
#include "base/scoped_fd.h"
#include "src/record/bpf_gate.h"
#include "src/record/budget.h"
#include "src/record/collector.h"

namespace microscope::record {
namespace {

constexpr uint64_t kPeriodNs = 1'000'000'000;

// Every thread of the recorder (not its children: a launched target is one,
// and the short-lived DWARF readers it forks are not counted either).
uint64_t OwnCpuNs() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  uint64_t total = 0;
  for (const timeval& t : {u.ru_utime, u.ru_stime}) {
    total += uint64_t(t.tv_sec) * 1'000'000'000ull + uint64_t(t.tv_usec) * 1000ull;
  }
  return total;
}

// The run time the kernel counted for every BPF program this process holds
// (each once, however many descriptors it has), while stats are enabled.
uint64_t OwnBpfRunNs() {
  uint64_t total = 0;
  std::set<uint32_t> seen;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return 0;
  while (dirent* e = readdir(d)) {
    char link[64];
    const std::string path = std::string("/proc/self/fd/") + e->d_name;
    ssize_t n = readlink(path.c_str(), link, sizeof(link) - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    if (std::string(link) != "anon_inode:bpf-prog") continue;
    bpf_prog_info info{};
    uint32_t len = sizeof(info);
    if (bpf_obj_get_info_by_fd(std::atoi(e->d_name), &info, &len) != 0) continue;
    if (seen.insert(info.id).second) total += info.run_time_ns;
  }
  closedir(d);
  return total;
}

class BudgetSource final : public EventlessSource {
 public:
  BudgetSource(const SourceContext& context, std::unique_ptr<SampleGate> gate, ScopedFd stats)
      : collector_(context.collector),
        gate_(std::move(gate)),
        stats_(std::move(stats)),
        controller_(context.options.budget_ppm, context.options.frequency,
                    context.options.call_graph == Processor::CallGraph::kFramePointer
                        ? 0
                        : context.options.stack_copy),
        budget_ppm_(context.options.budget_ppm) {
    start_ = last_ = Measure(MonotonicNowNs());
  }

  int wait_fd() const override { return -1; }

  void Poll(const PollWindow& window, RowSink* sink) override {
    if (window.final) return;
    const uint64_t time = MonotonicNowNs();
    if (time - last_.time < kPeriodNs) return;  // measured once a period: measuring costs too
    const Sample now = Measure(time);
    if (++periods_ == 4) steady_ = last_;
    BudgetObservation o{now.time, now.time - last_.time, now.cpu - last_.cpu, now.bpf - last_.bpf};
    last_ = now;
    std::optional<capture::BudgetStep> step = controller_.Observe(o);
    if (!step) return;
    const BudgetLevel& level = controller_.current();
    if (Status s = gate_->Set(level.keep_one_in, level.walks); !s.ok()) {
      sink->CountProblem("budget: the sample gate could not be set", s.message());
      return;
    }
    sink->SetSampleScale(now.time, level.keep_one_in);
    sink->SetStackLimit(level.stack_bytes);
    collector_->SetRoundMs(int(level.round_ms));
    steps_.push_back(*step);
  }

  void Finish(RowSink*, capture::Settings* settings) override {
    const Sample end = Measure(MonotonicNowNs());
    SampleGate::Counts counts = gate_->counts();
    auto share = [](const Sample& from, const Sample& to) -> uint64_t {
      const uint64_t wall = to.time - from.time;
      return wall == 0 ? 0 : (to.cpu - from.cpu + to.bpf - from.bpf) * 1'000'000ull / wall;
    };
    capture::SourceSetting& s =
        settings->SetSource(std::string(capture::kBudgetSource),
                            stats_.valid() ? "on" : "on: BPF run time not measured");
    s.values = {{"budget_ppm", budget_ppm_},      {"kept", counts.kept},
                {"dropped", counts.dropped},      {"wall_ns", end.time - start_.time},
                {"cpu_ns", end.cpu - start_.cpu}, {"bpf_ns", end.bpf - start_.bpf},
                {"share_ppm", share(start_, end)}};
    if (periods_ >= 4) s.values.push_back({"steady_share_ppm", share(steady_, end)});
    settings->budget_ppm = budget_ppm_;
    settings->budget_steps = steps_;
  }

 private:
  struct Sample {
    uint64_t time = 0, cpu = 0, bpf = 0;
  };
  Sample Measure(uint64_t time) const {
    return {time, OwnCpuNs(), stats_.valid() ? OwnBpfRunNs() : 0};
  }

  Collector* collector_;
  std::unique_ptr<SampleGate> gate_;
  ScopedFd stats_;  // BPF run-time statistics stay on while it is open
  BudgetController controller_;
  uint32_t budget_ppm_;
  Sample start_, last_, steady_;
  uint32_t periods_ = 0;
  std::vector<capture::BudgetStep> steps_;
};

}  // namespace

Result<std::unique_ptr<EventSource>> StartBudgetSource(const SourceContext& context) {
  if (!context.options.samples || context.collector == nullptr) {
    return Status::Error("--budget acts on CPU samples: this recording takes none");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<SampleGate> gate, SampleGate::Load());
  SampleGate* g = gate.get();
  RETURN_IF_ERROR(
      context.collector->AttachGate(g->program_fd(), [g](int fd) { return g->Chain(fd); }));
  // The kernel counts each program's run time while this is held open.
  ScopedFd stats(bpf_enable_stats(BPF_STATS_RUN_TIME));
  if (!stats.valid()) {
    context.warn(
        "--budget: the kernel's BPF run-time statistics are not available; only the "
        "recorder's own CPU time is measured");
  }
  context.settings->budget_ppm = context.options.budget_ppm;
  context.settings->SetSource(std::string(capture::kBudgetSource), "on");
  return std::unique_ptr<EventSource>(
      std::make_unique<BudgetSource>(context, std::move(gate), std::move(stats)));
}

}  // namespace microscope::record
