#include "src/cli/sources.h"

#include <vector>

#include "src/probes/probe_source.h"
#include "src/record/budget_source.h"
#include "src/record/exit_source.h"
#include "src/record/offcpu_source.h"
#include "src/record/readings_source.h"
#include "src/record/syscall_source.h"
#include "src/runtimes/jit/source.h"
#include "src/runtimes/runtime.h"

namespace microscope::cli {
namespace {

bool Always(const record::RecordOptions&) {
  return true;
}
bool Never(const record::RecordOptions&) {
  return false;
}

// One line per source. The budget's sample gate comes first: the runtime
// walkers' program goes behind it. Then each registered runtime
// (runtimes::Registered()): the sources that take stacks with BPF walk with
// their maps.
std::vector<record::SourceKind> MakeSources() {
  std::vector<record::SourceKind> kinds = {
      {capture::kBudgetSource, "the budget", false,
       [](const record::RecordOptions& o) { return o.budget_ppm != 0; }, Always,
       record::StartBudgetSource}};
  for (const runtimes::Runtime* r : runtimes::Registered()) {
    const std::string_view name = r->name;
    kinds.push_back(
        {name, r->frames, false,
         [name, marks = r->marks_when_off](const record::RecordOptions& o) {
           return o.samples && (o.RuntimeMode(name) != "off" || marks);
         },
         [name](const record::RecordOptions& o) { return o.RuntimeMode(name) == "bpf"; }, r->start,
         r->maps});
  }
  const record::SourceKind rest[] = {
      {capture::kOffCpuSource, "off-CPU time", false,
       [](const record::RecordOptions& o) { return o.off_cpu; },
       [](const record::RecordOptions& o) { return !o.samples; }, record::StartOffCpuSource},
      {capture::kSyscallSource, "system calls", false,
       [](const record::RecordOptions& o) { return o.syscalls; },
       [](const record::RecordOptions& o) { return !o.samples; }, record::StartSyscallSource},
      {"readings", "the targets' scheduler and cgroup readings", false,
       [](const record::RecordOptions& o) { return o.readings; },
       [](const record::RecordOptions& o) { return !o.samples; }, record::StartReadingsSource},
      {capture::kProbeSource, "probes", false,
       [](const record::RecordOptions& o) { return !o.probes.empty(); }, Always,
       probes::StartProbeSource},
      {"jit", "JIT code names", true, [](const record::RecordOptions& o) { return o.samples; },
       Never, runtimes::jit::StartJitSource},
      {capture::kExitSource, "exit statuses", true, Always, Never, record::StartExitSource},
  };
  kinds.insert(kinds.end(), std::begin(rest), std::end(rest));
  return kinds;
}

}  // namespace

std::span<const record::SourceKind> RecordingSources() {
  static const std::vector<record::SourceKind> kinds = MakeSources();
  return kinds;
}

}  // namespace microscope::cli
