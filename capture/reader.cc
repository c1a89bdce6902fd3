#include "capture/reader.h"

#include <flatbuffers/flatbuffers.h>

#include <cmath>

#include "capture/container.h"
#include "capture/schema_generated.h"
#include "capture/stack_interner.h"

namespace microscope::capture {
namespace {

namespace fbs = ::microscope::fb;

template <typename T>
std::vector<T> CopyOf(const flatbuffers::Vector<T>* v) {
  if (v == nullptr) return {};
  return std::vector<T>(v->begin(), v->end());
}

// A byte column read as an enum (values are checked by ValidateCapture).
template <typename E>
std::vector<E> EnumsOf(const flatbuffers::Vector<uint8_t>* v) {
  std::vector<E> out;
  if (v == nullptr) return out;
  out.reserve(v->size());
  for (uint8_t b : *v) out.push_back(E(b));
  return out;
}

template <typename T>
capture::Column<T> ViewOf(const flatbuffers::Vector<T>* v) {
  if (v == nullptr) return {};
  return capture::Column<T>::View(v->data(), v->size());
}

std::string Str(const flatbuffers::String* s) {
  return s ? s->str() : std::string();
}

std::vector<std::string> Strings(
    const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v == nullptr) return out;
  out.reserve(v->size());
  for (const auto* s : *v) out.push_back(Str(s));
  return out;
}

Result<Settings> ToSettings(const fbs::Settings* s) {
  Settings out;
  if (s == nullptr) return out;
  out.mode = Str(s->mode());
  out.command = Strings(s->command());
  out.target_pid = s->target_pid();
  out.frequency = s->frequency();
  out.call_graph = Str(s->call_graph());
  out.stack_copy = s->stack_copy();
  out.kernel_frames = s->kernel_frames();
  out.host = Str(s->host());
  out.kernel_release = Str(s->kernel_release());
  out.clock = Str(s->clock());
  out.recorder = Str(s->recorder());
  out.start_time = s->start_time();
  out.end_time = s->end_time();
  out.lost_records = s->lost_records();
  out.lost_samples = s->lost_samples();
  if (s->lost_task_records().has_value()) out.lost_task_records = *s->lost_task_records();
  if (s->ring_lost_records().has_value()) out.ring_lost_records = *s->ring_lost_records();
  if (s->kernel_lost_records().has_value()) out.kernel_lost_records = *s->kernel_lost_records();
  out.throttles = s->throttles();
  out.unthrottles = s->unthrottles();
  out.notes = Strings(s->notes());
  if (s->metric()) out.metric = s->metric()->str();
  if (s->unit()) out.unit = s->unit()->str();
  out.symbols = Str(s->symbols());
  out.boot_id = Str(s->boot_id());
  if (s->realtime_start().has_value()) out.realtime_start = *s->realtime_start();
  out.part = Str(s->part());
  out.part_index = s->part_index();
  out.recording_id = Str(s->recording_id());
  out.budget_ppm = s->budget_ppm();
  if (s->budget_steps() != nullptr) {
    for (const fbs::BudgetStep* st : *s->budget_steps()) {
      out.budget_steps.push_back({st->time(), st->level(), st->frequency(), st->stack_copy(),
                                  st->measured_ppm(), Str(st->reason())});
    }
  }
  if (s->sources() != nullptr) {
    for (const fbs::SourceSetting* src : *s->sources()) {
      SourceSetting& to = out.SetSource(Str(src->name()), Str(src->state()));
      std::vector<std::string> keys = Strings(src->keys());
      size_t values = src->values() != nullptr ? src->values()->size() : 0;
      // As for the columns: the verifier does not check the elements'
      // alignment (found by fuzz_capture: a misaligned read).
      if (values > 0 &&
          reinterpret_cast<uintptr_t>(src->values()->data()) % alignof(uint64_t) != 0) {
        return Status::Error(StatusCode::kDataLoss, "settings.sources[" + to.name +
                                                        "].values is misaligned in the payload");
      }
      if (values != keys.size()) {
        return Status::Error(StatusCode::kDataLoss,
                             "settings.sources[" + to.name + "]: " + std::to_string(keys.size()) +
                                 " keys but " + std::to_string(values) + " values");
      }
      for (size_t i = 0; i < keys.size(); ++i)
        to.values.push_back({keys[i], src->values()->Get(i)});
    }
  } else {
    // A 2.3 capture: its BPF parts had fields of their own.
    if (s->off_cpu() != nullptr && s->off_cpu()->size() > 0) {
      out.SetSource(std::string(kOffCpuSource), Str(s->off_cpu())).values = {
          {"min_ns", s->off_cpu_min()}};
    }
    if (s->syscalls() != nullptr && s->syscalls()->size() > 0) {
      out.SetSource(std::string(kSyscallSource), Str(s->syscalls())).values = {
          {"stack_min_ns", s->syscall_stack_min()}};
    }
  }
  return out;
}

std::string Where(const char* table, size_t row, const char* field) {
  return std::string(table) + "[" + std::to_string(row) + "]." + field;
}

// Checks that `id` indexes a table of `count` rows (or is kNone when allowed).
Status CheckRef(uint32_t id, size_t count, bool allow_none, const char* table, size_t row,
                const char* field, const char* target) {
  if (id == kNone && allow_none) return OkStatus();
  if (id < count) return OkStatus();
  return Status::Error(Where(table, row, field) + " = " + std::to_string(id) +
                       " is out of range (" + std::to_string(count) + " " + target + ")");
}

// Probe sites and records (2.8): lengths, references, each record's
// operation one its site's kind records, and time order.
Status ValidateProbes(const Capture& c) {
  const size_t ns = c.strings.size();
  const ProbeSites& ps = c.probe_sites;
  const size_t n = ps.kind.size();
  if (ps.name.size() != n || ps.file.size() != n || ps.line.size() != n || ps.module.size() != n) {
    return Status::Error("probe_sites columns differ in length (kind " + std::to_string(n) + ")");
  }
  for (size_t i = 0; i < n; ++i) {
    if (uint8_t(ps.kind[i]) < uint8_t(ProbeKind::kZone) ||
        uint8_t(ps.kind[i]) > uint8_t(ProbeKind::kCounter)) {
      return Status::Error(Where("probe_sites", i, "kind") + " has unknown value " +
                           std::to_string(int(ps.kind[i])));
    }
    RETURN_IF_ERROR(CheckRef(ps.name[i], ns, false, "probe_sites", i, "name", "strings"));
    RETURN_IF_ERROR(CheckRef(ps.file[i], ns, true, "probe_sites", i, "file", "strings"));
    RETURN_IF_ERROR(
        CheckRef(ps.module[i], c.modules.size(), true, "probe_sites", i, "module", "modules"));
  }
  const ProbeRecords& r = c.probe_records;
  const size_t nr = r.time.size();
  if (r.thread.size() != nr || r.site.size() != nr || r.op.size() != nr ||
      (!r.value.empty() && r.value.size() != nr) || (!r.text.empty() && r.text.size() != nr)) {
    return Status::Error("probe_records columns differ in length (time " + std::to_string(nr) +
                         ")");
  }
  for (size_t i = 0; i < nr; ++i) {
    RETURN_IF_ERROR(
        CheckRef(r.thread[i], c.threads.size(), false, "probe_records", i, "thread", "threads"));
    RETURN_IF_ERROR(CheckRef(r.site[i], n, false, "probe_records", i, "site", "probe_sites"));
    RETURN_IF_ERROR(CheckRef(r.TextAt(i), ns, true, "probe_records", i, "text", "strings"));
    const uint8_t op = uint8_t(r.op[i]);
    if (op < uint8_t(ProbeOp::kBegin) || op > uint8_t(ProbeOp::kLabelClear)) {
      return Status::Error(Where("probe_records", i, "op") + " has unknown value " +
                           std::to_string(int(op)));
    }
    if (ProbeOpKind(r.op[i]) != ps.kind[r.site[i]]) {
      return Status::Error(Where("probe_records", i, "op") + " is not one a " +
                           ProbeKindName(ps.kind[r.site[i]]) + " site records");
    }
    if (r.op[i] == ProbeOp::kCounter && !std::isfinite(r.ValueAt(i))) {
      return Status::Error(Where("probe_records", i, "value") + " is not a finite number");
    }
    if (r.op[i] == ProbeOp::kLabel && r.TextAt(i) == kNone) {
      return Status::Error(Where("probe_records", i, "text") + " is missing (a label's value)");
    }
    if (i > 0 && r.time[i] < r.time[i - 1]) {
      return Status::Error(Where("probe_records", i, "time") + " goes back in time");
    }
  }
  return OkStatus();
}

}  // namespace

const char* ProbeKindName(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::kZone:
      return "zone";
    case ProbeKind::kMark:
      return "mark";
    case ProbeKind::kLabel:
      return "label";
    case ProbeKind::kCounter:
      return "counter";
  }
  return "unknown";
}

ProbeKind ProbeOpKind(ProbeOp op) {
  switch (op) {
    case ProbeOp::kBegin:
    case ProbeOp::kEnd:
      return ProbeKind::kZone;
    case ProbeOp::kMark:
      return ProbeKind::kMark;
    case ProbeOp::kCounter:
      return ProbeKind::kCounter;
    case ProbeOp::kLabel:
    case ProbeOp::kLabelClear:
      return ProbeKind::kLabel;
  }
  return ProbeKind(0);
}

const char* StackEndName(StackEnd end) {
  switch (end) {
    case StackEnd::kFramePointerEnd:
      return "frame-pointer-end";
    case StackEnd::kKernelOnly:
      return "kernel-only";
    case StackEnd::kMaxDepth:
      return "max-depth";
    case StackEnd::kEmpty:
      return "empty";
    case StackEnd::kComplete:
      return "complete";
    case StackEnd::kNoUnwindInfo:
      return "no-unwind-info";
    case StackEnd::kStackCopyExhausted:
      return "stack-copy-exhausted";
    case StackEnd::kCfaOutsideCopy:
      return "cfa-outside-copy";
    case StackEnd::kBadReturnAddress:
      return "bad-return-address";
    case StackEnd::kUnmappedPc:
      return "unmapped-pc";
    case StackEnd::kUnsupportedCfi:
      return "unsupported-cfi";
    case StackEnd::kInExec:
      return "in-exec";
  }
  return "unknown";
}

const char* OffCpuStateName(OffCpuState state) {
  switch (state) {
    case OffCpuState::kSleeping:
      return "sleeping";
    case OffCpuState::kUninterruptible:
      return "uninterruptible";
    case OffCpuState::kPreempted:
      return "preempted";
    case OffCpuState::kOther:
      return "other";
  }
  return "unknown";
}

Status ValidateCapture(const Capture& c) {
  const size_t ns = c.strings.size();
  for (size_t i = 0; i < c.modules.size(); ++i) {
    const Module& m = c.modules[i];
    RETURN_IF_ERROR(CheckRef(m.path, ns, false, "modules", i, "path", "strings"));
    if (uint8_t(m.kind) > uint8_t(ModuleKind::kAnonymous)) {
      return Status::Error(Where("modules", i, "kind") + " has unknown value " +
                           std::to_string(int(m.kind)));
    }
    if (m.segments.size() > 256) {
      return Status::Error(Where("modules", i, "segments") + " has " +
                           std::to_string(m.segments.size()) + " rows (at most 256)");
    }
    if (m.build_id.size() > 64) {
      return Status::Error(Where("modules", i, "build_id") + " is " +
                           std::to_string(m.build_id.size()) + " bytes (at most 64)");
    }
  }
  for (size_t i = 0; i < c.mappings.size(); ++i) {
    const Mapping& m = c.mappings[i];
    RETURN_IF_ERROR(
        CheckRef(m.process, c.processes.size(), false, "mappings", i, "process", "processes"));
    RETURN_IF_ERROR(
        CheckRef(m.module, c.modules.size(), false, "mappings", i, "module", "modules"));
    if (m.start >= m.end) {
      return Status::Error(Where("mappings", i, "start") + " is not below its end");
    }
  }
  for (size_t i = 0; i < c.processes.size(); ++i) {
    RETURN_IF_ERROR(
        CheckRef(c.processes[i].command, ns, true, "processes", i, "command", "strings"));
  }
  for (size_t i = 0; i < c.threads.size(); ++i) {
    const Thread& t = c.threads[i];
    RETURN_IF_ERROR(
        CheckRef(t.process, c.processes.size(), false, "threads", i, "process", "processes"));
    RETURN_IF_ERROR(CheckRef(t.name, ns, true, "threads", i, "name", "strings"));
  }
  for (size_t i = 0; i < c.functions.size(); ++i) {
    const Function& f = c.functions[i];
    RETURN_IF_ERROR(CheckRef(f.name, ns, false, "functions", i, "name", "strings"));
    RETURN_IF_ERROR(CheckRef(f.raw_name, ns, true, "functions", i, "raw_name", "strings"));
    RETURN_IF_ERROR(
        CheckRef(f.module, c.modules.size(), true, "functions", i, "module", "modules"));
  }
  for (size_t i = 0; i < c.frames.size(); ++i) {
    const Frame& f = c.frames[i];
    if (uint8_t(f.kind) > uint8_t(FrameKind::kInterpreted)) {
      return Status::Error(Where("frames", i, "kind") + " has unknown value " +
                           std::to_string(int(f.kind)));
    }
    if (f.kind == FrameKind::kInterpreted && (f.function == kNone || f.module != kNone)) {
      return Status::Error(Where("frames", i, "function") +
                           ": an interpreted frame is known by its function, not a module");
    }
    RETURN_IF_ERROR(CheckRef(f.module, c.modules.size(), true, "frames", i, "module", "modules"));
    RETURN_IF_ERROR(
        CheckRef(f.function, c.functions.size(), true, "frames", i, "function", "functions"));
    RETURN_IF_ERROR(CheckRef(f.file, ns, true, "frames", i, "file", "strings"));
  }
  if (c.stacks.parent.size() != c.stacks.frame.size()) {
    return Status::Error("stacks: parent has " + std::to_string(c.stacks.parent.size()) +
                         " rows but frame has " + std::to_string(c.stacks.frame.size()));
  }
  std::vector<uint32_t> depth(c.stacks.size());
  for (size_t i = 0; i < c.stacks.size(); ++i) {
    uint32_t p = c.stacks.parent[i];
    if (p != kNone && p >= i) {
      return Status::Error(Where("stacks", i, "parent") + " = " + std::to_string(p) +
                           " is not an earlier node (a cycle or forward reference)");
    }
    depth[i] = p == kNone ? 1 : depth[p] + 1;
    if (depth[i] > kMaxStackDepth) {
      return Status::Error(Where("stacks", i, "parent") + ": the stack is deeper than " +
                           std::to_string(kMaxStackDepth) + " frames");
    }
    RETURN_IF_ERROR(
        CheckRef(c.stacks.frame[i], c.frames.size(), false, "stacks", i, "frame", "frames"));
  }
  const Samples& s = c.samples;
  const size_t n = s.time.size();
  if (s.thread.size() != n || s.stack.size() != n || s.weight.size() != n || s.end.size() != n ||
      (!s.count.empty() && s.count.size() != n)) {
    return Status::Error("samples: columns differ in length (time " + std::to_string(n) +
                         ", thread " + std::to_string(s.thread.size()) + ", stack " +
                         std::to_string(s.stack.size()) + ", weight " +
                         std::to_string(s.weight.size()) + ", end " + std::to_string(s.end.size()) +
                         ", count " + std::to_string(s.count.size()) + ")");
  }
  for (size_t i = 0; i < n; ++i) {
    RETURN_IF_ERROR(
        CheckRef(s.thread[i], c.threads.size(), false, "samples", i, "thread", "threads"));
    if (uint8_t(s.end[i]) >= kStackEndCount) {
      return Status::Error(Where("samples", i, "end") + " has unknown value " +
                           std::to_string(int(s.end[i])));
    }
    if (i > 0 && s.time[i] < s.time[i - 1]) {
      return Status::Error(Where("samples", i, "time") + " goes back in time");
    }
  }
  const Syscalls& y = c.syscalls;
  const size_t ny = y.time.size();
  if (y.duration.size() != ny || y.thread.size() != ny || y.nr.size() != ny || y.ret.size() != ny ||
      y.arg0.size() != ny || y.arg1.size() != ny || y.arg2.size() != ny) {
    return Status::Error("syscalls columns differ in length (time " + std::to_string(ny) + ")");
  }
  for (size_t i = 0; i < ny; ++i) {
    RETURN_IF_ERROR(
        CheckRef(y.thread[i], c.threads.size(), false, "syscalls", i, "thread", "threads"));
    if (i > 0 && y.time[i] < y.time[i - 1]) {
      return Status::Error(Where("syscalls", i, "time") + " goes back in time");
    }
  }
  if (!y.stack.empty() && y.stack.size() != ny) {
    return Status::Error("syscalls.stack has " + std::to_string(y.stack.size()) + " rows for " +
                         std::to_string(ny) + " calls");
  }
  const OffCpu& o = c.off_cpu;
  const size_t no = o.start.size();
  if (o.end.size() != no || o.thread.size() != no || o.stack.size() != no ||
      o.stack_end.size() != no || o.state.size() != no || o.waker_tid.size() != no ||
      o.waker_name.size() != no || o.flags.size() != no) {
    return Status::Error("off_cpu columns differ in length (start " + std::to_string(no) + ")");
  }
  for (size_t i = 0; i < no; ++i) {
    RETURN_IF_ERROR(
        CheckRef(o.thread[i], c.threads.size(), false, "off_cpu", i, "thread", "threads"));
    RETURN_IF_ERROR(CheckRef(o.waker_name[i], ns, true, "off_cpu", i, "waker_name", "strings"));
    if (uint8_t(o.stack_end[i]) >= kStackEndCount) {
      return Status::Error(Where("off_cpu", i, "stack_end") + " has unknown value " +
                           std::to_string(int(o.stack_end[i])));
    }
    if (uint8_t(o.state[i]) >= kOffCpuStateCount) {
      return Status::Error(Where("off_cpu", i, "state") + " has unknown value " +
                           std::to_string(int(o.state[i])));
    }
    if ((o.flags[i] & ~kOffCpuFlagsMask) != 0) {
      return Status::Error(Where("off_cpu", i, "flags") + " has unknown bits " +
                           std::to_string(int(o.flags[i])));
    }
    if (o.end[i] < o.start[i]) {
      return Status::Error(Where("off_cpu", i, "end") + " is before its start");
    }
    if (i > 0 && o.start[i] < o.start[i - 1]) {
      return Status::Error(Where("off_cpu", i, "start") + " goes back in time");
    }
  }
  const OffCpuShort& sh = c.off_cpu_short;
  const size_t nsh = sh.thread.size();
  if (sh.state.size() != nsh || sh.count.size() != nsh || sh.total.size() != nsh) {
    return Status::Error("off_cpu_short columns differ in length (thread " + std::to_string(nsh) +
                         ")");
  }
  for (size_t i = 0; i < nsh; ++i) {
    RETURN_IF_ERROR(
        CheckRef(sh.thread[i], c.threads.size(), false, "off_cpu_short", i, "thread", "threads"));
    if (uint8_t(sh.state[i]) >= kOffCpuStateCount) {
      return Status::Error(Where("off_cpu_short", i, "state") + " has unknown value " +
                           std::to_string(int(sh.state[i])));
    }
  }
  const LabelSpans& lb = c.labels;
  const size_t nl = lb.thread.size();
  if (lb.key.size() != nl || lb.value.size() != nl || lb.start.size() != nl ||
      lb.end.size() != nl) {
    return Status::Error("labels columns differ in length (thread " + std::to_string(nl) + ")");
  }
  for (size_t i = 0; i < nl; ++i) {
    RETURN_IF_ERROR(
        CheckRef(lb.thread[i], c.threads.size(), false, "labels", i, "thread", "threads"));
    RETURN_IF_ERROR(CheckRef(lb.key[i], ns, false, "labels", i, "key", "strings"));
    RETURN_IF_ERROR(CheckRef(lb.value[i], ns, false, "labels", i, "value", "strings"));
    if (lb.end[i] < lb.start[i]) {
      return Status::Error(Where("labels", i, "end") + " is before its start");
    }
  }
  RETURN_IF_ERROR(ValidateProbes(c));
  for (size_t i = 0; i < c.problems.size(); ++i) {
    RETURN_IF_ERROR(CheckRef(c.problems[i].kind, ns, false, "problems", i, "kind", "strings"));
    RETURN_IF_ERROR(CheckRef(c.problems[i].example, ns, true, "problems", i, "example", "strings"));
  }
  // Every table that holds stacks points into the tree (or at no stack).
  Status stacks = OkStatus();
  ForEachStackColumn(c, [&](const char* table, const auto& column) {
    for (size_t i = 0; i < column.size() && stacks.ok(); ++i) {
      stacks = CheckRef(column[i], c.stacks.size(), true, table, i, "stack", "stacks");
    }
  });
  return stacks;
}

Result<Capture> ParseCapturePayload(std::span<const uint8_t> payload) {
  return ParseCapturePayload(std::vector<uint8_t>(payload.begin(), payload.end()));
}

Result<Capture> ParseCapturePayload(std::vector<uint8_t>&& owned) {
  auto backing = std::make_shared<const std::vector<uint8_t>>(std::move(owned));
  std::span<const uint8_t> payload(*backing);
  flatbuffers::Verifier verifier(payload.data(), payload.size(),
                                 /*max_depth=*/64, /*max_tables=*/1u << 30);
  // VerifyCaptureBuffer checks the size and the identifier before reading them.
  if (payload.size() < 8 || !fbs::VerifyCaptureBuffer(verifier)) {
    return Status::Error("payload fails FlatBuffers verification (corrupt table layout)");
  }
  const fbs::Capture* root = fbs::GetCapture(payload.data());
  // The verifier checks each vector's length prefix, not that its elements
  // are aligned for their type; a writer always aligns them, so refuse a
  // buffer that does not rather than read (or view) misaligned structs.
  auto misaligned = [](const auto* v) {
    if (v == nullptr || v->size() == 0) return false;  // nothing to read in an empty one
    // Vectors of structs hold `const S*` elements: the struct's alignment counts.
    using Element = std::remove_cv_t<std::remove_pointer_t<decltype(v->data())>>;
    using T =
        std::conditional_t<std::is_pointer_v<Element>, std::remove_pointer_t<Element>, Element>;
    return reinterpret_cast<uintptr_t>(v->data()) % alignof(T) != 0;
  };
  const fbs::Samples* cols = root->samples();
  const fbs::Syscalls* sys = root->syscalls();
  const fbs::OffCpu* off = root->off_cpu();
  const fbs::OffCpuShort* shorts = root->off_cpu_short();
  const fbs::LabelSpans* labels = root->labels();
  const fbs::Stacks* st = root->stacks();
  const fbs::ProbeSites* psites = root->probe_sites();
  const fbs::ProbeRecords* precs = root->probe_records();
  const std::pair<const char*, bool> checks[] = {
      {"mappings", misaligned(root->mappings())},
      {"processes", misaligned(root->processes())},
      {"threads", misaligned(root->threads())},
      {"functions", misaligned(root->functions())},
      {"function_raw_names", misaligned(root->function_raw_names())},
      {"frames", misaligned(root->frames())},
      {"problems", misaligned(root->problems())},
      {"stacks.parent", st && misaligned(st->parent())},
      {"stacks.frame", st && misaligned(st->frame())},
      {"samples.time", cols && misaligned(cols->time())},
      {"samples.thread", cols && misaligned(cols->thread())},
      {"samples.stack", cols && misaligned(cols->stack())},
      {"samples.weight", cols && misaligned(cols->weight())},
      {"samples.count", cols && misaligned(cols->count())},
      {"syscalls.time", sys && misaligned(sys->time())},
      {"syscalls.duration", sys && misaligned(sys->duration())},
      {"syscalls.thread", sys && misaligned(sys->thread())},
      {"syscalls.nr", sys && misaligned(sys->nr())},
      {"syscalls.ret", sys && misaligned(sys->ret())},
      {"syscalls.arg0", sys && misaligned(sys->arg0())},
      {"syscalls.arg1", sys && misaligned(sys->arg1())},
      {"syscalls.arg2", sys && misaligned(sys->arg2())},
      {"syscalls.stack", sys && misaligned(sys->stack())},
      {"off_cpu.start", off && misaligned(off->start())},
      {"off_cpu.end", off && misaligned(off->end())},
      {"off_cpu.thread", off && misaligned(off->thread())},
      {"off_cpu.stack", off && misaligned(off->stack())},
      {"off_cpu.waker_tid", off && misaligned(off->waker_tid())},
      {"off_cpu.waker_name", off && misaligned(off->waker_name())},
      {"off_cpu_short.thread", shorts && misaligned(shorts->thread())},
      {"off_cpu_short.count", shorts && misaligned(shorts->count())},
      {"off_cpu_short.total", shorts && misaligned(shorts->total())},
      {"labels.thread", labels && misaligned(labels->thread())},
      {"labels.key", labels && misaligned(labels->key())},
      {"labels.value", labels && misaligned(labels->value())},
      {"labels.start", labels && misaligned(labels->start())},
      {"labels.end", labels && misaligned(labels->end())},
      {"probe_sites.name", psites && misaligned(psites->name())},
      {"probe_sites.file", psites && misaligned(psites->file())},
      {"probe_sites.line", psites && misaligned(psites->line())},
      {"probe_sites.module", psites && misaligned(psites->module_())},
      {"probe_records.time", precs && misaligned(precs->time())},
      {"probe_records.thread", precs && misaligned(precs->thread())},
      {"probe_records.site", precs && misaligned(precs->site())},
      {"probe_records.value", precs && misaligned(precs->value())},
      {"probe_records.text", precs && misaligned(precs->text())},
  };
  for (const auto& [table, bad] : checks) {
    if (bad)
      return Status::Error(std::string(table) + " is misaligned in the payload (corrupt layout)");
  }
  Capture c;
  c.strings = Strings(root->strings());
  if (root->modules()) {
    for (const fbs::Module* m : *root->modules()) {
      Module out;
      out.path = m->path();
      if (m->build_id()) out.build_id.assign(m->build_id()->begin(), m->build_id()->end());
      out.size = m->size();
      out.kind = ModuleKind(m->kind());
      out.runtime = Runtime(m->runtime());
      if (m->segments()) {
        if (reinterpret_cast<uintptr_t>(m->segments()->Data()) % alignof(uint64_t) != 0) {
          return Status::Error(Where("modules", c.modules.size(), "segments") +
                               " is misaligned in the payload");
        }
        for (const fbs::Segment* s : *m->segments()) {
          out.segments.push_back({s->offset(), s->vaddr(), s->size()});
        }
      }
      c.modules.push_back(std::move(out));
    }
  }
  if (root->mappings()) {
    for (const fbs::Mapping* m : *root->mappings()) {
      c.mappings.push_back({m->process(), m->module_(), m->start(), m->end(), m->file_offset(),
                            m->time_start(), m->time_end()});
    }
  }
  if (root->processes()) {
    for (const fbs::Process* p : *root->processes()) {
      c.processes.push_back({p->pid(), p->parent_pid(), p->command(), p->exit_status(),
                             p->start_time(), p->end_time()});
    }
  }
  if (root->threads()) {
    for (const fbs::Thread* t : *root->threads()) {
      c.threads.push_back({t->tid(), t->process(), t->name(), t->start_time(), t->end_time()});
    }
  }
  if (root->functions()) {
    for (const fbs::Function* f : *root->functions())
      c.functions.push_back({f->name(), f->module_()});
    if (const auto* raw = root->function_raw_names()) {
      if (raw->size() != c.functions.size()) {
        return Status::Error("function_raw_names has " + std::to_string(raw->size()) +
                             " rows for " + std::to_string(c.functions.size()) + " functions");
      }
      for (size_t i = 0; i < raw->size(); ++i) c.functions[i].raw_name = raw->Get(i);
    }
  }
  if (root->frames()) {
    for (const fbs::Frame* f : *root->frames()) {
      c.frames.push_back(
          {FrameKind(f->kind()), f->module_(), f->address(), f->function(), f->file(), f->line()});
    }
  }
  if (const fbs::Syscalls* y = root->syscalls()) {
    c.syscalls.time = CopyOf(y->time());
    c.syscalls.duration = CopyOf(y->duration());
    c.syscalls.thread = CopyOf(y->thread());
    c.syscalls.nr = CopyOf(y->nr());
    c.syscalls.ret = CopyOf(y->ret());
    c.syscalls.arg0 = CopyOf(y->arg0());
    c.syscalls.arg1 = CopyOf(y->arg1());
    c.syscalls.arg2 = CopyOf(y->arg2());
    c.syscalls.stack = CopyOf(y->stack());
  }
  if (off != nullptr) {
    c.off_cpu.start = CopyOf(off->start());
    c.off_cpu.end = CopyOf(off->end());
    c.off_cpu.thread = CopyOf(off->thread());
    c.off_cpu.stack = CopyOf(off->stack());
    c.off_cpu.stack_end = EnumsOf<StackEnd>(off->stack_end());
    c.off_cpu.state = EnumsOf<OffCpuState>(off->state());
    c.off_cpu.waker_tid = CopyOf(off->waker_tid());
    c.off_cpu.waker_name = CopyOf(off->waker_name());
    c.off_cpu.flags = CopyOf(off->flags());
  }
  if (shorts != nullptr) {
    c.off_cpu_short.thread = CopyOf(shorts->thread());
    c.off_cpu_short.state = EnumsOf<OffCpuState>(shorts->state());
    c.off_cpu_short.count = CopyOf(shorts->count());
    c.off_cpu_short.total = CopyOf(shorts->total());
  }
  if (labels != nullptr) {
    c.labels.thread = CopyOf(labels->thread());
    c.labels.key = CopyOf(labels->key());
    c.labels.value = CopyOf(labels->value());
    c.labels.start = CopyOf(labels->start());
    c.labels.end = CopyOf(labels->end());
  }
  if (psites != nullptr) {
    c.probe_sites.kind = EnumsOf<ProbeKind>(psites->kind());
    c.probe_sites.name = CopyOf(psites->name());
    c.probe_sites.file = CopyOf(psites->file());
    c.probe_sites.line = CopyOf(psites->line());
    c.probe_sites.module = CopyOf(psites->module_());
  }
  if (precs != nullptr) {
    c.probe_records.time = CopyOf(precs->time());
    c.probe_records.thread = CopyOf(precs->thread());
    c.probe_records.site = CopyOf(precs->site());
    c.probe_records.op = EnumsOf<ProbeOp>(precs->op());
    c.probe_records.value = CopyOf(precs->value());
    c.probe_records.text = CopyOf(precs->text());
  }
  if (root->stacks()) {
    c.stacks.parent = CopyOf(root->stacks()->parent());
    c.stacks.frame = CopyOf(root->stacks()->frame());
  }
  if (const fbs::Samples* s = root->samples()) {
    // Views into the payload, which the capture keeps (little-endian host).
    c.samples.time = ViewOf(s->time());
    c.samples.thread = ViewOf(s->thread());
    c.samples.stack = ViewOf(s->stack());
    c.samples.weight = ViewOf(s->weight());
    c.samples.count = ViewOf(s->count());
    if (s->end()) {
      static_assert(sizeof(StackEnd) == 1);
      c.samples.end = Column<StackEnd>::View(reinterpret_cast<const StackEnd*>(s->end()->data()),
                                             s->end()->size());
    }
  }
  if (root->problems()) {
    for (const fbs::Problem* p : *root->problems()) {
      c.problems.push_back({p->kind(), p->count(), p->example()});
    }
  }
  ASSIGN_OR_RETURN(c.settings, ToSettings(root->settings()));
  c.backing = std::move(backing);
  RETURN_IF_ERROR(ValidateCapture(c));
  return c;
}

Result<Capture> ReadCapture(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> payload, ReadContainer(path));
  return ParseCapturePayload(std::move(payload));
}

Result<Capture> ReadCaptureFrom(int fd) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> payload, ReadContainerFrom(fd));
  return ParseCapturePayload(std::move(payload));
}

}  // namespace microscope::capture
