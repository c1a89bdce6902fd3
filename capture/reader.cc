#include "capture/reader.h"

#include <flatbuffers/flatbuffers.h>

#include "capture/columns.h"
#include "capture/container.h"
#include "capture/schema_generated.h"

namespace microscope::capture {
namespace {

namespace fbs = ::microscope::fb;

template <typename T>
std::vector<T> CopyOf(const flatbuffers::Vector<T>* v) {
  if (v == nullptr) return {};
  return std::vector<T>(v->begin(), v->end());
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

template <typename T, typename Store>
Status ReadColumn(const flatbuffers::Table* table, size_t index, const char* table_name,
                  const char* name, Store* out) {
  using S = StoredType<T>;
  const auto* v =
      table == nullptr
          ? nullptr
          : table->GetPointer<const flatbuffers::Vector<S>*>(flatbuffers::voffset_t(4 + 2 * index));
  *out = Store();
  if (v == nullptr || v->size() == 0) return OkStatus();
  // The verifier checks each vector's length prefix, not that its elements
  // are aligned for their type; a writer always aligns them.
  if (reinterpret_cast<uintptr_t>(v->data()) % alignof(S) != 0) {
    return Status::Error(std::string(table_name) + "." + name +
                         " is misaligned in the payload (corrupt layout)");
  }
  const T* data = reinterpret_cast<const T*>(v->data());
  if constexpr (std::is_same_v<Store, Column<T>>) {
    *out = Column<T>::View(data, v->size());  // the capture keeps the payload
  } else {
    out->assign(data, data + v->size());
  }
  return OkStatus();
}

template <typename Table>
Status ReadTable(const void* fb_table, const char* name, Table* out) {
  const auto* table = reinterpret_cast<const flatbuffers::Table*>(fb_table);
  size_t index = 0;
  Status status = OkStatus();
  Table::ForEachColumn(*out, [&](const ColumnInfo& info, auto& column) {
    using T = std::remove_cvref_t<decltype(column[0])>;
    if (status.ok()) status = ReadColumn<T>(table, index, name, info.name, &column);
    ++index;
  });
  return status;
}

// (2.11) The imported traces: each whole in itself (validate.cc checks
// its references).
Status ReadTraces(const fbs::Capture* root, Capture* out) {
  if (root->traces() == nullptr) return OkStatus();
  for (const fbs::Trace* t : *root->traces()) {
    Trace tr;
    tr.path = Str(t->path());
    tr.digest = Str(t->digest());
    tr.format = Str(t->format());
    tr.tool = Str(t->tool());
    tr.clock = Str(t->clock());
    tr.clock_note = Str(t->clock_note());
    tr.offset = t->offset();
    if (t->uncertainty().has_value()) tr.uncertainty = *t->uncertainty();
    tr.imported_at = t->imported_at();
    tr.notes = Strings(t->notes());
    tr.device_properties = Str(t->device_properties());
    tr.strings = Strings(t->strings());
    if (t->tracks() != nullptr) {
      for (const fbs::TraceTrack* k : *t->tracks()) {
        tr.tracks.push_back({Str(k->name()), Str(k->group()), TraceTrackKind(k->kind()),
                             Str(k->trace_pid()), Str(k->trace_tid()), k->pid(), k->tid(),
                             Str(k->mapped_by()), k->sort_index()});
      }
    }
    const std::string where = "traces[" + std::to_string(out->traces.size()) + "]";
    RETURN_IF_ERROR(ReadTable(t->events(), (where + ".events").c_str(), &tr.events));
    RETURN_IF_ERROR(ReadTable(t->flows(), (where + ".flows").c_str(), &tr.flows));
    tr.skipped = t->skipped();
    out->traces.push_back(std::move(tr));
  }
  return OkStatus();
}

}  // namespace

const char* TraceEventKindName(TraceEventKind kind) {
  switch (kind) {
    case TraceEventKind::kSpan:
      return "span";
    case TraceEventKind::kInstant:
      return "instant";
    case TraceEventKind::kCounter:
      return "counter";
  }
  return "unknown";
}

const char* TraceTrackKindName(TraceTrackKind kind) {
  switch (kind) {
    case TraceTrackKind::kThread:
      return "thread";
    case TraceTrackKind::kDevice:
      return "device";
    case TraceTrackKind::kAsync:
      return "async";
    case TraceTrackKind::kCounter:
      return "counter";
    case TraceTrackKind::kProcess:
      return "process";
  }
  return "unknown";
}

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
    case OffCpuState::kBlocked:
      return "blocked";
    case OffCpuState::kRunnable:
      return "runnable";
  }
  return "unknown";
}

namespace {

// The verifier checks each vector's length prefix, not that its elements
// are aligned for their type; a writer always aligns them, so a buffer that
// does not is refused rather than read (or viewed) misaligned.
Status CheckAligned(const fbs::Capture* root) {
  auto misaligned = [](const auto* v) {
    if (v == nullptr || v->size() == 0) return false;  // nothing to read in an empty one
    // Vectors of structs hold `const S*` elements: the struct's alignment counts.
    using Element = std::remove_cv_t<std::remove_pointer_t<decltype(v->data())>>;
    using T =
        std::conditional_t<std::is_pointer_v<Element>, std::remove_pointer_t<Element>, Element>;
    return reinterpret_cast<uintptr_t>(v->data()) % alignof(T) != 0;
  };
  const fbs::Stacks* st = root->stacks();
  const std::pair<const char*, bool> checks[] = {
      {"mappings", misaligned(root->mappings())},
      {"processes", misaligned(root->processes())},
      {"threads", misaligned(root->threads())},
      {"functions", misaligned(root->functions())},
      {"function_raw_names", misaligned(root->function_raw_names())},
      {"frames", misaligned(root->frames())},
      {"problems", misaligned(root->problems())},
      {"gaps", misaligned(root->gaps())},
      {"stacks.parent", st && misaligned(st->parent())},
      {"stacks.frame", st && misaligned(st->frame())},
  };
  for (const auto& [table, bad] : checks) {
    if (bad)
      return Status::Error(std::string(table) + " is misaligned in the payload (corrupt layout)");
  }
  return OkStatus();
}

// Modules, mappings, processes, threads, functions and frames: tables of
// structs and strings, read row by row.
Status ReadDictionaries(const fbs::Capture* root, Capture* out) {
  Capture& c = *out;
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
  return OkStatus();
}

}  // namespace

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
  RETURN_IF_ERROR(CheckAligned(root));
  Capture c;
  c.strings = Strings(root->strings());
  RETURN_IF_ERROR(ReadDictionaries(root, &c));
  // The event tables, column by column as tables.h declares them.
#define MICROSCOPE_READ_TABLE(Struct, member, COLUMNS) \
  RETURN_IF_ERROR(ReadTable(root->member(), #member, &c.member));
  MICROSCOPE_EVENT_TABLES(MICROSCOPE_READ_TABLE)
#undef MICROSCOPE_READ_TABLE
  if (root->stacks()) {
    c.stacks.parent = CopyOf(root->stacks()->parent());
    c.stacks.frame = CopyOf(root->stacks()->frame());
  }
  if (root->problems()) {
    for (const fbs::Problem* p : *root->problems()) {
      c.problems.push_back({p->kind(), p->count(), p->example()});
    }
  }
  if (root->gaps()) {
    c.gaps.reserve(root->gaps()->size());
    for (const fbs::Gap* g : *root->gaps()) {
      c.gaps.push_back({g->begin(), g->end(), g->pid(), g->tid(), g->cpu(),
                        static_cast<GapCause>(g->cause()), g->count()});
    }
  }
  ASSIGN_OR_RETURN(c.settings, ToSettings(root->settings()));
  RETURN_IF_ERROR(ReadTraces(root, &c));
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
