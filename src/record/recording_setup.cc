#include "src/record/recording_setup.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "src/record/decode.h"
#include "src/record/proc.h"
#include "src/record/pump.h"
#include "src/record/session.h"
#include "src/symbols/kallsyms.h"

namespace microscope::record {

namespace {

bool CopiesStack(const RecordOptions& options) {
  return options.samples && options.stacks &&
         options.call_graph != Processor::CallGraph::kFramePointer;
}

}  // namespace

CollectorOptions CollectorOptionsFor(const RecordOptions& options) {
  CollectorOptions c;
  c.frequency = options.frequency;
  c.sample = options.samples;
  c.stack_copy = CopiesStack(options) ? options.stack_copy : 0;
  c.callchain = options.stacks;
  // Samples counted by thread need no mappings: their events go on every
  // task of each CPU, where a context switch costs the target nothing.
  c.every_task = options.samples && !options.stacks;
  c.ring_pages = options.mmap_pages != 0 ? options.mmap_pages : DefaultRingPages(options);
  return c;
}

void DescribeRecording(const RecordOptions& options, const CollectorOptions& copts,
                       capture::Settings* s) {
  utsname u;
  if (uname(&u) == 0) {
    s->host = u.nodename;
    s->kernel_release = u.release;
  }
  s->clock = "CLOCK_MONOTONIC";
  s->boot_id = symbols::BootId();
  s->recorder = "microscope " MICROSCOPE_VERSION;
  s->frequency = options.frequency;
  s->stack_copy = copts.stack_copy;
  switch (options.stacks ? options.call_graph : Processor::CallGraph::kFramePointer) {
    case Processor::CallGraph::kFramePointer:
      if (!options.stacks) {
        s->call_graph = "none";
        s->notes.push_back("no stacks (record --level 0): CPU samples counted by thread");
        break;
      }
      s->call_graph = "fp";
      s->notes.push_back("call graph fp: user frames from the kernel's frame-pointer chain");
      break;
    case Processor::CallGraph::kDwarf:
      s->call_graph = "dwarf";
      s->notes.push_back(
          "call graph dwarf: user frames unwound from copied registers and stack by CFI "
          "(.eh_frame, .debug_frame) only");
      break;
    case Processor::CallGraph::kAuto:
      s->call_graph = "auto";
      s->notes.push_back(
          "call graph auto: user frames unwound by CFI where a module has it, by frame "
          "pointers (in the copied stack) where a module has none");
      break;
  }
  if (options.samples) {
    s->notes.push_back("preset " + options.preset);
  } else {
    s->frequency = 0;
    s->notes.push_back("no CPU samples: BPF parts only");
  }
}

Status OpenEveryThread(pid_t target, Collector* collector) {
  std::set<pid_t> opened;
  for (pid_t tid : ListTasks(target)) {
    RETURN_IF_ERROR(collector->AddTask(tid, /*enable_on_exec=*/false, /*hold_sampling=*/true));
    opened.insert(tid);
  }
  if (opened.empty()) {
    return Status::Error(StatusCode::kNotFound, "no process with pid " + std::to_string(target));
  }
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> fresh;
    for (pid_t tid : ListTasks(target)) {
      if (!opened.count(tid)) fresh.push_back(tid);
    }
    if (fresh.empty()) break;
    usleep(10000);  // a FORK record is written just after the thread becomes visible
    collector->Drain();
    std::set<uint32_t> inherited = ForkedTids(collector->arenas(), collector->layout());
    for (pid_t tid : fresh) {
      if (!inherited.count(uint32_t(tid)))
        RETURN_IF_ERROR(collector->AddTask(tid, /*enable_on_exec=*/false, /*hold_sampling=*/true));
      opened.insert(tid);
    }
  }
  return OkStatus();
}

uint32_t DefaultRingPages(const RecordOptions& options) {
  // Each sample takes about stack_copy bytes of ring with a stack copy:
  // size each CPU's ring for a quarter second of samples (1 to 64 MiB).
  uint32_t pages = 256;
  if (CopiesStack(options)) {
    uint64_t want = uint64_t(options.stack_copy + 512) * options.frequency / 4 / 4096;
    while (pages < want && pages < 16384) pages *= 2;
  }
  return pages;
}

}  // namespace microscope::record
