#include "capture/writer.h"

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "capture/columns.h"
#include "capture/container.h"
#include "capture/schema_generated.h"

namespace microscope::capture {
namespace {

namespace fbs = ::microscope::fb;
using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;

Offset<fbs::Settings> BuildSettings(FlatBufferBuilder& b, const Settings& s) {
  auto mode = b.CreateString(s.mode);
  auto command = b.CreateVectorOfStrings(s.command);
  auto call_graph = b.CreateString(s.call_graph);
  auto host = b.CreateString(s.host);
  auto kernel = b.CreateString(s.kernel_release);
  auto clock = b.CreateString(s.clock);
  auto recorder = b.CreateString(s.recorder);
  auto notes = b.CreateVectorOfStrings(s.notes);
  auto metric = b.CreateString(s.metric);
  auto unit = b.CreateString(s.unit);
  auto symbols = b.CreateString(s.symbols);
  auto boot_id = b.CreateString(s.boot_id);
  // 2.3 readers know the BPF parts by fields of their own.
  const SourceSetting* off = s.Source(kOffCpuSource);
  const SourceSetting* sys = s.Source(kSyscallSource);
  auto off_cpu = b.CreateString(off != nullptr ? off->state : "");
  auto syscalls = b.CreateString(sys != nullptr ? sys->state : "");
  std::vector<flatbuffers::Offset<fbs::SourceSetting>> source_rows;
  for (const SourceSetting& src : s.sources) {
    std::vector<std::string> keys;
    std::vector<uint64_t> values;
    for (const auto& [k, v] : src.values) {
      keys.push_back(k);
      values.push_back(v);
    }
    source_rows.push_back(
        fbs::CreateSourceSetting(b, b.CreateString(src.name), b.CreateString(src.state),
                                 b.CreateVectorOfStrings(keys), b.CreateVector(values)));
  }
  auto sources = b.CreateVector(source_rows);
  auto part = b.CreateString(s.part);
  auto recording_id = b.CreateString(s.recording_id);
  std::vector<flatbuffers::Offset<fbs::BudgetStep>> step_rows;
  for (const BudgetStep& st : s.budget_steps) {
    step_rows.push_back(fbs::CreateBudgetStep(b, st.time, st.level, st.frequency, st.stack_copy,
                                              st.measured_ppm, b.CreateString(st.reason)));
  }
  auto budget_steps = b.CreateVector(step_rows);
  fbs::SettingsBuilder sb(b);
  sb.add_mode(mode);
  sb.add_command(command);
  sb.add_target_pid(s.target_pid);
  sb.add_frequency(s.frequency);
  sb.add_call_graph(call_graph);
  sb.add_stack_copy(s.stack_copy);
  sb.add_kernel_frames(s.kernel_frames);
  sb.add_host(host);
  sb.add_kernel_release(kernel);
  sb.add_clock(clock);
  sb.add_recorder(recorder);
  sb.add_start_time(s.start_time);
  sb.add_end_time(s.end_time);
  sb.add_lost_records(s.lost_records);
  sb.add_lost_samples(s.lost_samples);
  if (s.lost_task_records) sb.add_lost_task_records(*s.lost_task_records);
  if (s.ring_lost_records) sb.add_ring_lost_records(*s.ring_lost_records);
  if (s.kernel_lost_records) sb.add_kernel_lost_records(*s.kernel_lost_records);
  sb.add_throttles(s.throttles);
  sb.add_unthrottles(s.unthrottles);
  sb.add_notes(notes);
  sb.add_metric(metric);
  sb.add_symbols(symbols);
  sb.add_boot_id(boot_id);
  sb.add_unit(unit);
  sb.add_off_cpu(off_cpu);
  sb.add_syscalls(syscalls);
  sb.add_off_cpu_min(off != nullptr ? off->Value("min_ns") : 0);
  sb.add_syscall_stack_min(sys != nullptr ? sys->Value("stack_min_ns") : 0);
  sb.add_sources(sources);
  if (s.realtime_start) sb.add_realtime_start(*s.realtime_start);
  sb.add_part(part);
  sb.add_part_index(s.part_index);
  sb.add_recording_id(recording_id);
  sb.add_budget_ppm(s.budget_ppm);
  sb.add_budget_steps(budget_steps);
  return sb.Finish();
}

template <typename Out, typename In, typename F>
std::vector<Out> MapRows(const std::vector<In>& rows, F f) {
  std::vector<Out> out;
  out.reserve(rows.size());
  for (const In& r : rows) out.push_back(f(r));
  return out;
}

// An event table as tables.h declares its columns: each column at vtable
// slot 4 + 2 index (flatc numbers schema.fbs's fields in order), an empty
// one left out.
template <typename Table>
flatbuffers::uoffset_t WriteTable(FlatBufferBuilder& b, const Table& t) {
  std::vector<std::pair<flatbuffers::voffset_t, flatbuffers::uoffset_t>> fields;
  flatbuffers::voffset_t slot = 4;
  Table::ForEachColumn(t, [&](const ColumnInfo&, const auto& column) {
    using S = StoredType<std::remove_cvref_t<decltype(column[0])>>;
    if (!column.empty())
      fields.push_back(
          {slot, b.CreateVector(reinterpret_cast<const S*>(column.data()), column.size()).o});
    slot += 2;
  });
  const flatbuffers::uoffset_t start = b.StartTable();
  for (auto [field, offset] : fields) b.AddOffset(field, flatbuffers::Offset<void>(offset));
  return b.EndTable(start);
}

Offset<flatbuffers::Vector<Offset<fbs::Trace>>> BuildTraces(FlatBufferBuilder& b,
                                                            const std::vector<Trace>& traces) {
  std::vector<Offset<fbs::Trace>> rows;
  for (const Trace& t : traces) {
    std::vector<Offset<fbs::TraceTrack>> tracks;
    for (const TraceTrack& k : t.tracks) {
      tracks.push_back(fbs::CreateTraceTrack(b, b.CreateString(k.name), b.CreateString(k.group),
                                             uint8_t(k.kind), b.CreateString(k.trace_pid),
                                             b.CreateString(k.trace_tid), k.pid, k.tid,
                                             b.CreateString(k.mapped_by), k.sort_index));
    }
    auto path = b.CreateString(t.path);
    auto digest = b.CreateString(t.digest);
    auto format = b.CreateString(t.format);
    auto tool = b.CreateString(t.tool);
    auto clock = b.CreateString(t.clock);
    auto clock_note = b.CreateString(t.clock_note);
    auto notes = b.CreateVectorOfStrings(t.notes);
    auto device = b.CreateString(t.device_properties);
    auto strings = b.CreateVectorOfStrings(t.strings);
    auto tracks_v = b.CreateVector(tracks);
    const Offset<fbs::TraceEvents> events(WriteTable(b, t.events));
    const Offset<fbs::TraceFlows> flows(WriteTable(b, t.flows));
    fbs::TraceBuilder tb(b);
    tb.add_path(path);
    tb.add_digest(digest);
    tb.add_format(format);
    tb.add_tool(tool);
    tb.add_clock(clock);
    tb.add_clock_note(clock_note);
    tb.add_offset(t.offset);
    if (t.uncertainty) tb.add_uncertainty(*t.uncertainty);
    tb.add_imported_at(t.imported_at);
    tb.add_notes(notes);
    tb.add_device_properties(device);
    tb.add_strings(strings);
    tb.add_tracks(tracks_v);
    tb.add_events(events);
    tb.add_flows(flows);
    tb.add_skipped(t.skipped);
    rows.push_back(tb.Finish());
  }
  return b.CreateVector(rows);
}

}  // namespace

std::vector<uint8_t> SerializeCapture(const Capture& c) {
  FlatBufferBuilder b(1 << 20);
  auto strings = b.CreateVectorOfStrings(c.strings);

  std::vector<Offset<fbs::Module>> modules;
  modules.reserve(c.modules.size());
  for (const Module& m : c.modules) {
    auto id = b.CreateVector(m.build_id);
    auto segments =
        m.segments.empty()
            ? 0
            : b.CreateVectorOfStructs(MapRows<fbs::Segment>(m.segments, [](const Segment& s) {
                return fbs::Segment(s.offset, s.vaddr, s.size);
              }));
    modules.push_back(fbs::CreateModule(b, m.path, id, m.size, fbs::ModuleKind(m.kind), segments,
                                        uint8_t(m.runtime)));
  }
  auto modules_v = b.CreateVector(modules);

  auto mappings = b.CreateVectorOfStructs(MapRows<fbs::Mapping>(c.mappings, [](const Mapping& m) {
    return fbs::Mapping(m.process, m.module, m.start, m.end, m.file_offset, m.time_start,
                        m.time_end);
  }));
  auto processes = b.CreateVectorOfStructs(MapRows<fbs::Process>(c.processes, [](const Process& p) {
    return fbs::Process(p.pid, p.parent_pid, p.command, p.exit_status, p.start_time, p.end_time);
  }));
  auto threads = b.CreateVectorOfStructs(MapRows<fbs::Thread>(c.threads, [](const Thread& t) {
    return fbs::Thread(t.tid, t.process, t.name, t.start_time, t.end_time);
  }));
  auto functions = b.CreateVectorOfStructs(MapRows<fbs::Function>(
      c.functions, [](const Function& f) { return fbs::Function(f.name, f.module); }));
  flatbuffers::Offset<flatbuffers::Vector<uint32_t>> raw_names = 0;
  if (std::any_of(c.functions.begin(), c.functions.end(),
                  [](const Function& f) { return f.raw_name != kNone; })) {
    std::vector<uint32_t> ids;
    ids.reserve(c.functions.size());
    for (const Function& f : c.functions) ids.push_back(f.raw_name);
    raw_names = b.CreateVector(ids);
  }
  auto frames = b.CreateVectorOfStructs(MapRows<fbs::Frame>(c.frames, [](const Frame& f) {
    return fbs::Frame(fbs::FrameKind(f.kind), f.module, f.address, f.function, f.file, f.line);
  }));
  auto stacks =
      fbs::CreateStacks(b, b.CreateVector(c.stacks.parent), b.CreateVector(c.stacks.frame));
  // The event tables (tables.h); each but the samples only when it has rows.
#define MICROSCOPE_WRITE_TABLE(Struct, member, COLUMNS)                                       \
  const flatbuffers::Offset<fbs::Struct> member(                                              \
      c.member.size() > 0 || std::string_view(#member) == "samples" ? WriteTable(b, c.member) \
                                                                    : 0);
  MICROSCOPE_EVENT_TABLES(MICROSCOPE_WRITE_TABLE)
#undef MICROSCOPE_WRITE_TABLE
  auto problems = b.CreateVectorOfStructs(MapRows<fbs::Problem>(
      c.problems, [](const Problem& p) { return fbs::Problem(p.kind, p.count, p.example); }));
  Offset<flatbuffers::Vector<const fbs::Gap*>> gaps = 0;
  if (!c.gaps.empty()) {
    gaps = b.CreateVectorOfStructs(MapRows<fbs::Gap>(c.gaps, [](const Gap& g) {
      return fbs::Gap(g.begin, g.end, g.pid, g.tid, g.cpu, uint8_t(g.cause), g.count);
    }));
  }
  auto settings = BuildSettings(b, c.settings);
  Offset<flatbuffers::Vector<Offset<fbs::Trace>>> traces = 0;
  if (!c.traces.empty()) traces = BuildTraces(b, c.traces);

  fbs::CaptureBuilder cb(b);
  cb.add_strings(strings);
  cb.add_modules(modules_v);
  cb.add_mappings(mappings);
  cb.add_processes(processes);
  cb.add_threads(threads);
  cb.add_functions(functions);
  cb.add_frames(frames);
  cb.add_stacks(stacks);
  cb.add_samples(samples);
  cb.add_problems(problems);
  cb.add_settings(settings);
  if (!raw_names.IsNull()) cb.add_function_raw_names(raw_names);
  if (!syscalls.IsNull()) cb.add_syscalls(syscalls);
  if (!off_cpu.IsNull()) cb.add_off_cpu(off_cpu);
  if (!off_cpu_short.IsNull()) cb.add_off_cpu_short(off_cpu_short);
  if (!labels.IsNull()) cb.add_labels(labels);
  if (!gaps.IsNull()) cb.add_gaps(gaps);
  if (!probe_sites.IsNull()) cb.add_probe_sites(probe_sites);
  if (!probe_records.IsNull()) cb.add_probe_records(probe_records);
  if (!readings.IsNull()) cb.add_readings(readings);
  if (!traces.IsNull()) cb.add_traces(traces);
  b.Finish(cb.Finish(), fbs::CaptureIdentifier());
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

Status WriteCapture(const Capture& capture, const std::string& path) {
  // A FlatBuffers buffer holds at most 2 GiB; refuse before the builder would abort.
  uint64_t estimate = capture.samples.size() * 25 + capture.stacks.size() * 8 +
                      capture.frames.size() * 24 + capture.mappings.size() * 48 +
                      capture.syscalls.size() * 60 + capture.off_cpu.size() * 42 +
                      capture.probe_records.size() * 33 + capture.readings.size() * 32;
  for (const std::string& s : capture.strings) estimate += s.size() + 8;
  for (const Trace& t : capture.traces) {
    estimate += t.events.size() * 48 + t.flows.size() * 20 + t.tracks.size() * 64;
    for (const std::string& s : t.strings) estimate += s.size() + 8;
  }
  if (estimate > kMaxPayloadBytes - (64u << 20)) {
    return Status::Error("capture too large for one file (about " + std::to_string(estimate >> 20) +
                         " MiB); record a shorter --duration")
        .WithContext(path);
  }
  std::vector<uint8_t> payload = SerializeCapture(capture);
  return WriteContainer(path, payload);
}

}  // namespace microscope::capture
