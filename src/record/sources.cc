#include "src/record/sources.h"

#include "src/probes/probe_source.h"
#include "src/record/budget_source.h"
#include "src/record/exit_source.h"
#include "src/record/offcpu_source.h"
#include "src/record/syscall_source.h"
#include "src/runtimes/jit/source.h"
#include "src/runtimes/node/source.h"
#include "src/runtimes/python/source.h"

namespace microscope::record {
namespace {

struct SourceKind {
  std::string_view name;  // in the capture's settings (capture::SourceSetting)
  const char* part;       // how a refusal names it
  // A part every recording tries: refused, it says why in the settings
  // only, not on stderr (an unprivileged user would see it each time).
  bool quiet;
  bool (*wanted)(const RecordOptions&);
  // Refused, the recording stops (otherwise it goes on without the part).
  bool (*required)(const RecordOptions&);
  Result<std::unique_ptr<EventSource>> (*start)(const SourceContext&);
};

// One line per source. The budget's sample gate comes first: the runtime
// walkers' program goes behind it. Then the runtime walkers: the sources
// that take stacks with BPF walk with their maps.
const SourceKind kSources[] = {
    {capture::kBudgetSource, "the budget", false,
     [](const RecordOptions& o) { return o.budget_ppm != 0; },
     [](const RecordOptions&) { return true; }, StartBudgetSource},
    {capture::kPythonSource, "Python frames", false,
     [](const RecordOptions& o) { return o.samples && o.python != "off"; },
     [](const RecordOptions& o) { return o.python == "bpf"; }, runtimes::python::StartPythonSource},
    {capture::kNodeSource, "JavaScript frames", false,
     [](const RecordOptions& o) { return o.samples && o.node != "off"; },
     [](const RecordOptions& o) { return o.node == "bpf"; }, runtimes::node::StartNodeSource},
    {capture::kOffCpuSource, "off-CPU time", false,
     [](const RecordOptions& o) { return o.off_cpu; },
     [](const RecordOptions& o) { return !o.samples; }, StartOffCpuSource},
    {capture::kSyscallSource, "system calls", false,
     [](const RecordOptions& o) { return o.syscalls; },
     [](const RecordOptions& o) { return !o.samples; }, StartSyscallSource},
    {capture::kProbeSource, "probes", false,
     [](const RecordOptions& o) { return !o.probes.empty(); },
     [](const RecordOptions&) { return true; }, probes::StartProbeSource},
    {"jit", "JIT code names", true, [](const RecordOptions& o) { return o.samples; },
     [](const RecordOptions&) { return false; }, runtimes::jit::StartJitSource},
    {capture::kExitSource, "exit statuses", true, [](const RecordOptions&) { return true; },
     [](const RecordOptions&) { return false; }, StartExitSource},

};

}  // namespace

Result<std::vector<std::unique_ptr<EventSource>>> StartSources(
    const SourceContext& context, const std::function<void(const std::string&)>& warn) {
  std::vector<std::unique_ptr<EventSource>> sources;
  for (const SourceKind& kind : kSources) {
    if (!kind.wanted(context.options)) continue;
    Result<std::unique_ptr<EventSource>> started = kind.start(context);
    if (started.ok()) {
      sources.push_back(std::move(started).value());
      continue;
    }
    if (kind.required(context.options)) return started.status();
    const std::string why = started.status().message();
    context.settings->SetSource(std::string(kind.name), "off: " + why);
    context.settings->notes.push_back(std::string(kind.part) + " not recorded: " + why);
    if (!kind.quiet) warn(std::string(kind.part) + " not recorded: " + why);
  }
  return sources;
}

}  // namespace microscope::record
