#include "src/cli/sources.h"

#include "src/probes/probe_source.h"
#include "src/record/budget_source.h"
#include "src/record/exit_source.h"
#include "src/record/offcpu_source.h"
#include "src/record/syscall_source.h"
#include "src/runtimes/jit/source.h"
#include "src/runtimes/node/source.h"
#include "src/runtimes/python/source.h"

namespace microscope::cli {
namespace {

// The maps each runtime's BPF walker reads (bpf/python_walk.bpf.h,
// bpf/node_walk.bpf.h), shared by every BPF object that walks.
constexpr std::string_view kPythonMaps[] = {"py_processes", "py_threads"};
constexpr std::string_view kNodeMaps[] = {"v8_processes", "v8_images"};

// One line per source. The budget's sample gate comes first: the runtime
// walkers' program goes behind it. Then the runtime walkers: the sources
// that take stacks with BPF walk with their maps.
const record::SourceKind kSources[] = {
    {capture::kBudgetSource, "the budget", false,
     [](const record::RecordOptions& o) { return o.budget_ppm != 0; },
     [](const record::RecordOptions&) { return true; }, record::StartBudgetSource},
    {capture::kPythonSource, "Python frames", false,
     [](const record::RecordOptions& o) { return o.samples && o.python != "off"; },
     [](const record::RecordOptions& o) { return o.python == "bpf"; },
     runtimes::python::StartPythonSource, kPythonMaps},
    {capture::kNodeSource, "JavaScript frames", false,
     [](const record::RecordOptions& o) { return o.samples && o.node != "off"; },
     [](const record::RecordOptions& o) { return o.node == "bpf"; },
     runtimes::node::StartNodeSource, kNodeMaps},
    {capture::kOffCpuSource, "off-CPU time", false,
     [](const record::RecordOptions& o) { return o.off_cpu; },
     [](const record::RecordOptions& o) { return !o.samples; }, record::StartOffCpuSource},
    {capture::kSyscallSource, "system calls", false,
     [](const record::RecordOptions& o) { return o.syscalls; },
     [](const record::RecordOptions& o) { return !o.samples; }, record::StartSyscallSource},
    {capture::kProbeSource, "probes", false,
     [](const record::RecordOptions& o) { return !o.probes.empty(); },
     [](const record::RecordOptions&) { return true; }, probes::StartProbeSource},
    {"jit", "JIT code names", true, [](const record::RecordOptions& o) { return o.samples; },
     [](const record::RecordOptions&) { return false; }, runtimes::jit::StartJitSource},
    {capture::kExitSource, "exit statuses", true, [](const record::RecordOptions&) { return true; },
     [](const record::RecordOptions&) { return false; }, record::StartExitSource},
};

}  // namespace

std::span<const record::SourceKind> RecordingSources() {
  return kSources;
}

}  // namespace microscope::cli
