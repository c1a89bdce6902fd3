#include "formats/pprof.h"

#include <protozero/pbf_writer.hpp>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "analysis/keys.h"
#include "analysis/labels.h"
#include "analysis/profile.h"
#include "analysis/zones.h"
#include "base/hex.h"
#include "capture/reader.h"
#include "formats/capture_builder.h"
#include "formats/gzip.h"
#include "formats/pprof_fields.h"

namespace microscope::formats {
namespace {

using capture::kNone;
using namespace pprof_fields;

class Strings {
 public:
  Strings() { Id(""); }
  int64_t Id(const std::string& s) {
    auto [it, inserted] = ids_.try_emplace(s, int64_t(list_.size()));
    if (inserted) list_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& list() const { return list_; }

 private:
  std::unordered_map<std::string, int64_t> ids_;
  std::vector<std::string> list_;
};

void AddValueType(protozero::pbf_writer& pw, uint32_t field, Strings& s, const std::string& type,
                  const std::string& unit) {
  protozero::pbf_writer vt(pw, field);
  vt.add_int64(1, s.Id(type));
  vt.add_int64(2, s.Id(unit));
}

constexpr uint64_t kModuleSpan = 1ull << 36;

}  // namespace

std::vector<uint8_t> WritePprof(const capture::Capture& original,
                                const analysis::SampleFilter& filter, analysis::Metric metric,
                                analysis::Cancel cancel) {
  const bool off = original.off_cpu.size() > 0 || original.off_cpu_short.size() > 0;
  // Short off-CPU intervals have no stack: they get a pseudo frame.
  std::optional<capture::Capture> with_short;
  capture::StackId short_node = kNone;
  if (original.off_cpu_short.size() > 0) {
    with_short = original;
    short_node = analysis::AppendPseudoFrame(
        &*with_short, analysis::ShortOffCpuFrameName(analysis::OffCpuMin(original)), kNone);
  }
  // The program's zones and labels (probes) become sample labels.
  if (original.probe_records.size() > 0) {
    if (!with_short) with_short = original;
    analysis::AddProbeLabelSpans(&*with_short);
  }
  const capture::Capture& c = with_short ? *with_short : original;
  // Aggregate rows per (stack, thread, off-CPU state or kCpuRow, the
  // sample's labels: an index into label_sets): values samples, the
  // capture's metric, and off-CPU time.
  constexpr uint8_t kCpuRow = 0xFF;
  std::map<std::tuple<uint32_t, uint32_t, uint8_t, uint32_t>, std::array<uint64_t, 3>> agg;
  const analysis::SampleLabels labels(c);
  // Each distinct set of (key, value) a sample carried; 0: none.
  std::map<std::vector<std::pair<capture::StringId, capture::StringId>>, uint32_t> label_ids{
      {{}, 0}};
  std::vector<size_t> spans;
  std::vector<std::pair<capture::StringId, capture::StringId>> set;
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (cancel.At(i)) return {};
    if (!filter.Keep(c, i)) continue;
    uint32_t label_id = 0;
    if (!labels.empty()) {
      spans.clear();
      set.clear();
      labels.At(c.samples.thread[i], c.samples.time[i], &spans);
      for (size_t sp : spans) set.emplace_back(c.labels.key[sp], c.labels.value[sp]);
      label_id = label_ids.try_emplace(set, uint32_t(label_ids.size())).first->second;
    }
    auto& v = agg[{c.samples.stack[i], c.samples.thread[i], kCpuRow, label_id}];
    v[0] += c.samples.CountAt(i);
    v[1] += c.samples.weight[i];
  }
  const capture::OffCpu& o = c.off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    if (!filter.Keep(o.thread[i], o.start[i], o.stack[i])) continue;
    agg[{o.stack[i], o.thread[i], uint8_t(o.state[i]), 0}][2] += o.end[i] - o.start[i];
  }
  const capture::OffCpuShort& sh = c.off_cpu_short;
  for (size_t i = 0; i < sh.size(); ++i) {
    if (!filter.Keep(sh.thread[i], c.settings.start_time, kNone)) continue;
    agg[{short_node, sh.thread[i], uint8_t(sh.state[i]), 0}][2] += sh.total[i];
  }
  const bool wall = off && metric == analysis::Metric::kWall;
  std::vector<bool> frame_used(c.frames.size());
  for (const auto& [key, v] : agg) {
    for (uint32_t n = std::get<0>(key); n != kNone; n = c.stacks.parent[n])
      frame_used[c.stacks.frame[n]] = true;
  }
  // Module address ranges: file-backed modules each get kModuleSpan.
  std::vector<uint64_t> module_base(c.modules.size(), 0);
  std::vector<bool> module_used(c.modules.size()), module_named(c.modules.size()),
      module_lines(c.modules.size());
  for (size_t f = 0; f < c.frames.size(); ++f) {
    const capture::Frame& fr = c.frames[f];
    if (!frame_used[f] || fr.module == kNone || fr.kind != capture::FrameKind::kNative) continue;
    if (c.modules[fr.module].kind == capture::ModuleKind::kAnonymous) continue;
    module_used[fr.module] = true;
    if (fr.function != kNone) module_named[fr.module] = true;
    if (fr.line != 0) module_lines[fr.module] = true;
  }
  std::string out;
  protozero::pbf_writer pw(out);
  Strings s;
  const bool cpu = c.settings.metric == "cpu" && c.settings.unit == "nanoseconds";
  AddValueType(pw, kSampleType, s, "samples", "count");
  AddValueType(pw, kSampleType, s, c.settings.metric, c.settings.unit);
  if (off) AddValueType(pw, kSampleType, s, "off_cpu", "nanoseconds");
  if (wall) AddValueType(pw, kSampleType, s, "wall", "nanoseconds");
  std::vector<const std::vector<std::pair<capture::StringId, capture::StringId>>*> label_sets(
      label_ids.size());
  for (const auto& [set, id] : label_ids) label_sets[id] = &set;
  std::map<std::vector<capture::FrameId>, uint64_t> location_ids;
  auto LocationOf = [&](const std::vector<capture::FrameId>& group) {
    return location_ids.try_emplace(group, location_ids.size() + 1).first->second;
  };
  for (const auto& [key, v] : agg) {
    protozero::pbf_writer sample(pw, kSample);
    // A native frame and the inline frames above it at the same address are
    // one pprof location with several lines (innermost first).
    std::vector<uint64_t> locations;
    std::vector<capture::FrameId> group;
    for (uint32_t n = std::get<0>(key); n != kNone; n = c.stacks.parent[n]) {
      capture::FrameId f = c.stacks.frame[n];
      const capture::Frame& fr = c.frames[f];
      if (!group.empty() && (fr.address != c.frames[group.back()].address ||
                             fr.module != c.frames[group.back()].module)) {
        for (capture::FrameId g : group) locations.push_back(LocationOf({g}));
        group.clear();
      }
      group.push_back(f);
      if (fr.kind != capture::FrameKind::kInline) {
        locations.push_back(LocationOf(group));
        group.clear();
      }
    }
    for (capture::FrameId g : group) locations.push_back(LocationOf({g}));
    sample.add_packed_uint64(1, locations.begin(), locations.end());
    int64_t values[4] = {int64_t(v[0]), int64_t(v[1]), int64_t(v[2]), int64_t(v[1] + v[2])};
    sample.add_packed_int64(2, std::begin(values), std::begin(values) + (wall ? 4 : off ? 3 : 2));
    const capture::Thread& t = c.threads[std::get<1>(key)];
    if (std::get<2>(key) != kCpuRow) {
      protozero::pbf_writer label(sample, 3);
      label.add_int64(1, s.Id("state"));
      label.add_int64(2, s.Id(capture::OffCpuStateName(capture::OffCpuState(std::get<2>(key)))));
    }
    {
      protozero::pbf_writer label(sample, 3);
      label.add_int64(1, s.Id("pid"));
      label.add_int64(3, c.processes[t.process].pid);
    }
    {
      protozero::pbf_writer label(sample, 3);
      label.add_int64(1, s.Id("tid"));
      label.add_int64(3, t.tid);
    }
    {
      protozero::pbf_writer label(sample, 3);
      label.add_int64(1, s.Id("thread"));
      label.add_int64(2, s.Id(c.str(t.name)));
    }
    for (const auto& [k, value] : *label_sets[std::get<3>(key)]) {
      protozero::pbf_writer label(sample, 3);
      label.add_int64(1, s.Id(c.str(k)));
      label.add_int64(2, s.Id(c.str(value)));
    }
  }
  uint64_t next_base = kModuleSpan;
  for (size_t m = 0; m < c.modules.size(); ++m) {
    if (!module_used[m]) continue;
    module_base[m] = next_base;
    next_base += kModuleSpan;
    protozero::pbf_writer mapping(pw, kMapping);
    mapping.add_uint64(1, m + 1);
    mapping.add_uint64(2, module_base[m]);
    mapping.add_uint64(3, module_base[m] + kModuleSpan);
    mapping.add_uint64(4, 0);
    mapping.add_int64(5, s.Id(c.str(c.modules[m].path)));
    mapping.add_int64(6, s.Id(HexBytes(c.modules[m].build_id)));
    mapping.add_bool(7, module_named[m]);
    mapping.add_bool(8, module_lines[m]);
    mapping.add_bool(9, module_lines[m]);
  }
  // pprof functions are (name, source file) pairs: an inlined line's file
  // differs from its function's own.
  std::map<std::pair<capture::FunctionId, capture::StringId>, uint64_t> pprof_functions;
  // An unnamed frame is a function of its own, named as reports name it
  // (UnnamedFrameName): pprof -top drops addresses and would otherwise merge
  // every unnamed location of a module into one "[module]" row.
  std::map<std::string, uint64_t> unnamed_functions;
  uint64_t function_count = 0;
  std::map<capture::FunctionId, uint64_t> start_lines;  // of interpreted functions
  for (const auto& [group, id] : location_ids) {
    const capture::Frame& fr = c.frames[group.back()];  // the outermost: holds the address
    protozero::pbf_writer loc(pw, kLocation);
    loc.add_uint64(1, id);
    bool mapped =
        fr.module != kNone && module_used[fr.module] && fr.kind == capture::FrameKind::kNative;
    if (mapped) {
      loc.add_uint64(2, fr.module + 1);
      loc.add_uint64(3, module_base[fr.module] + fr.address);
    } else if (fr.kind != capture::FrameKind::kNamed &&
               fr.kind != capture::FrameKind::kInterpreted) {
      loc.add_uint64(3, fr.address);  // interpreted frames have no address (it holds a line)
    }
    for (capture::FrameId f : group) {
      const capture::Frame& line_frame = c.frames[f];
      if (line_frame.function == kNone) {
        if (line_frame.kind == capture::FrameKind::kNamed ||
            line_frame.kind == capture::FrameKind::kInterpreted)
          continue;  // no address to name it by
        std::string name =
            mapped ? analysis::UnnamedFrameName(c, line_frame) : HexAddress(line_frame.address);
        auto [it, inserted] = unnamed_functions.try_emplace(name, function_count + 1);
        if (inserted) ++function_count;
        protozero::pbf_writer line(loc, 4);
        line.add_uint64(1, it->second);
        continue;
      }
      auto [it, inserted] =
          pprof_functions.try_emplace({line_frame.function, line_frame.file}, function_count + 1);
      if (inserted) ++function_count;
      if (line_frame.kind == capture::FrameKind::kInterpreted)
        start_lines[line_frame.function] = line_frame.address;
      protozero::pbf_writer line(loc, 4);
      line.add_uint64(1, it->second);
      if (line_frame.line != 0) line.add_int64(2, line_frame.line);
    }
  }
  for (const auto& [key, id] : pprof_functions) {
    protozero::pbf_writer func(pw, kFunction);
    func.add_uint64(1, id);
    func.add_int64(2, s.Id(c.str(c.functions[key.first].name)));
    // system_name: the symbol as the binary spells it (mangled), when known.
    const capture::Function& fn = c.functions[key.first];
    func.add_int64(3, s.Id(c.str(fn.raw_name != kNone ? fn.raw_name : fn.name)));
    if (key.second != kNone) func.add_int64(4, s.Id(c.str(key.second)));
    if (auto start = start_lines.find(key.first); start != start_lines.end())
      func.add_int64(5, int64_t(start->second));
  }
  for (const auto& [name, id] : unnamed_functions) {
    protozero::pbf_writer func(pw, kFunction);
    func.add_uint64(1, id);
    func.add_int64(2, s.Id(name));
  }
  if (c.settings.end_time > c.settings.start_time) {
    pw.add_int64(kDurationNanos, int64_t(c.settings.end_time - c.settings.start_time));
  }
  if (cpu) {
    AddValueType(pw, kPeriodType, s, "cpu", "nanoseconds");
    if (c.settings.frequency != 0)
      pw.add_int64(kPeriod, int64_t(1000000000ull / c.settings.frequency));
  }
  pw.add_int64(kDefaultSampleType, s.Id(!off || metric == analysis::Metric::kCpu ? c.settings.metric
                                        : wall                                   ? "wall"
                                                                                 : "off_cpu"));
  for (const std::string& str : s.list()) pw.add_string(kStringTable, str);
  return Gzip(std::span(reinterpret_cast<const uint8_t*>(out.data()), out.size()));
}

}  // namespace microscope::formats
