#include <doctest.h>

#include <string>
#include <tuple>
#include <vector>

#include "capture/compact.h"
#include "capture/reader.h"
#include "capture/window.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::capture;

namespace {

// Each sample as text that no renumbering changes: time, thread, weight
// and its frames' function names, root first.
std::vector<std::string> SampleTexts(const Capture& c) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.samples.size(); ++i) {
    std::string s = std::to_string(c.samples.time[i]) + " " +
                    std::to_string(c.threads[c.samples.thread[i]].tid) + " " +
                    std::to_string(c.samples.weight[i]);
    std::vector<std::string> frames;
    for (StackId n = c.samples.stack[i]; n != kNone; n = c.stacks.parent[n]) {
      const Frame& f = c.frames[c.stacks.frame[n]];
      frames.push_back(f.function == kNone ? "?" : c.str(c.functions[f.function].name));
    }
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) s += " " + *it;
    out.push_back(s);
  }
  return out;
}

std::vector<std::string> ProbeTexts(const Capture& c) {
  std::vector<std::string> out;
  const ProbeRecords& r = c.probe_records;
  for (size_t i = 0; i < r.size(); ++i) {
    out.push_back(std::to_string(r.time[i]) + " " + std::to_string(c.threads[r.thread[i]].tid) +
                  " " + c.str(c.probe_sites.name[r.site[i]]) + " " + std::to_string(int(r.op[i])) +
                  " " + c.str(r.TextAt(i)) + " " + std::to_string(r.ValueAt(i)));
  }
  return out;
}

std::vector<std::string> OffCpuTexts(const Capture& c) {
  std::vector<std::string> out;
  const OffCpu& o = c.off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    out.push_back(std::to_string(o.start[i]) + ".." + std::to_string(o.end[i]) + " " +
                  std::to_string(c.threads[o.thread[i]].tid) + " " + c.str(o.waker_name[i]));
  }
  return out;
}

// The part of `live` that a cut at `before` takes, standing alone.
Capture Part(const Capture& live_dictionaries, Capture* live, uint64_t from, uint64_t before,
             const std::vector<char>* open = nullptr, bool short_counts = false) {
  Capture part;
  TimeCut cut;
  cut.before = before;
  cut.open_labels = open;
  cut.short_counts = short_counts;
  TakeEventRows(live, cut, &part);
  part.strings = live_dictionaries.strings;
  part.modules = live_dictionaries.modules;
  part.mappings = live_dictionaries.mappings;
  part.processes = live_dictionaries.processes;
  part.threads = live_dictionaries.threads;
  part.functions = live_dictionaries.functions;
  part.frames = live_dictionaries.frames;
  part.stacks = live_dictionaries.stacks;
  part.probe_sites = live_dictionaries.probe_sites;
  part.settings = live_dictionaries.settings;
  part.settings.start_time = from;
  part.settings.end_time = before;
  CompactDictionaries(&part);
  NormalizeEventRows(&part);
  return part;
}

}  // namespace

TEST_CASE("Window: parts cut at any times stand alone and merge back to the whole") {
  const Capture whole = testing::MakeProbeCapture();
  REQUIRE(ValidateCapture(whole).ok());
  for (uint64_t a : {10, 103, 150, 500}) {
    for (uint64_t b : {104, 180, 700, 1001}) {
      if (b <= a) continue;
      CAPTURE(a);
      CAPTURE(b);
      Capture live = whole;
      std::vector<Capture> parts;
      parts.push_back(Part(whole, &live, 10, a));
      parts.push_back(Part(whole, &live, a, b));
      parts.push_back(Part(whole, &live, b, std::max<uint64_t>(b, 1000), nullptr,
                           /*short_counts=*/true));
      CHECK(live.samples.size() == 0);
      CHECK(live.probe_records.size() == 0);
      CHECK(live.off_cpu.size() == 0);
      size_t samples = 0;
      for (const Capture& p : parts) {
        REQUIRE(ValidateCapture(p).ok());
        samples += p.samples.size();
        // A part keeps only what its rows need: a part without samples or
        // intervals has no stacks, frames or functions.
        if (p.samples.size() == 0 && p.off_cpu.size() == 0) {
          CHECK(p.stacks.size() == 0);
          CHECK(p.frames.size() == 0);
          CHECK(p.functions.size() == 0);
        }
        for (size_t i = 0; i < p.samples.size(); ++i)
          CHECK(p.samples.time[i] >= p.settings.start_time);
      }
      CHECK(samples == whole.samples.size());
      Capture merged = MergeCaptures(std::move(parts));
      REQUIRE(ValidateCapture(merged).ok());
      CHECK(SampleTexts(merged) == SampleTexts(whole));
      CHECK(ProbeTexts(merged) == ProbeTexts(whole));
      CHECK(OffCpuTexts(merged) == OffCpuTexts(whole));
      CHECK(merged.off_cpu_short.count == whole.off_cpu_short.count);
      CHECK(merged.settings.start_time == 10);
      CHECK(merged.settings.end_time == std::max<uint64_t>(b, 1000));
      // Node 4 (main>run>unnamed) holds no sample: no part keeps it.
      CHECK(merged.stacks.size() == whole.stacks.size() - 1);
      CHECK(merged.probe_sites.size() == whole.probe_sites.size());
    }
  }
}

TEST_CASE("Window: compaction drops what no row needs and renumbers the rest") {
  Capture c = testing::MakeTestCapture();
  c.strings.push_back("unused");
  c.functions.push_back({StringId(c.strings.size() - 1), 0});
  c.frames.push_back({FrameKind::kNative, 0, 0x99, FunctionId(c.functions.size() - 1)});
  c.stacks.parent.push_back(0);  // main>unused, no sample on it
  c.stacks.frame.push_back(FrameId(c.frames.size() - 1));
  c.strings.push_back("idle");
  // A process of another span (after this capture's end), no row of its own.
  c.processes.push_back({200, 1, StringId(c.strings.size() - 1), -1, 1100, 1200});
  c.threads.push_back({200, 1, StringId(c.strings.size() - 1), 1100, 1200});
  c.mappings.push_back({1, 0, 0x1000, 0x2000, 0, 1100, 1200});
  // One that lived in the span without a sample: it stays, exit status and all.
  c.strings.push_back("short");
  c.processes.push_back({300, 100, StringId(c.strings.size() - 1), 3, 500, 600});
  c.threads.push_back({300, 2, StringId(c.strings.size() - 1), 500, 600});
  REQUIRE(ValidateCapture(c).ok());
  const std::vector<std::string> before = SampleTexts(c);
  CompactDictionaries(&c);
  REQUIRE(ValidateCapture(c).ok());
  CHECK(SampleTexts(c) == before);
  CHECK(c.stacks.size() == 4);  // main, main>run, main>run>hot, main>run>cold
  CHECK(c.frames.size() == 4);
  CHECK(c.functions.size() == 4);
  REQUIRE(c.processes.size() == 2);
  CHECK(c.processes[1].pid == 300);
  CHECK(c.processes[1].exit_status == 3);
  CHECK(c.threads.size() == 2);
  CHECK(c.threads[1].process == 1);
  CHECK(c.mappings.size() == 1);
  for (const std::string& s : c.strings) {
    CHECK(s != "unused");
    CHECK(s != "idle");
  }
  // "problem" and "example" stay: the problem needs them.
  CHECK(std::find(c.strings.begin(), c.strings.end(), "example") != c.strings.end());
}

TEST_CASE("Window: a rolling cut evicts what ended before the window, keeps what reaches in") {
  Capture c = testing::MakeProbeCapture();
  TimeCut cut;
  cut.before = 450;
  cut.intervals_by_end = true;
  TakeEventRows(&c, cut, nullptr);
  // [200,500) and [600,900) reach into the window; [10,400) and [20,90) do not.
  CHECK(OffCpuTexts(c) == std::vector<std::string>{"200..500 100 ", "600..900 101 "});
  CHECK(c.samples.size() == 0);
  CHECK(c.probe_records.size() == 0);
  CHECK(c.off_cpu_short.size() == 2);  // counts have no time: kept
  CHECK(ValidateCapture(c).ok());
}

TEST_CASE("Window: an open label span is copied into each part and merged into one") {
  Capture c = testing::MakeTestCapture();
  c.strings.push_back("route");
  c.strings.push_back("/a");
  const StringId key = StringId(c.strings.size() - 2), value = StringId(c.strings.size() - 1);
  auto span = [&](uint64_t start, uint64_t end) {
    c.labels.thread.push_back(0);
    c.labels.key.push_back(key);
    c.labels.value.push_back(value);
    c.labels.start.push_back(start);
    c.labels.end.push_back(end);
  };
  span(100, 102);  // closed
  span(103, 105);  // still growing at the cut
  const Capture dictionaries = c;
  std::vector<char> open = {0, 1};
  Capture live = c;
  TimeCut cut;
  cut.before = 106;
  cut.open_labels = &open;
  Capture first;
  std::vector<uint32_t> index = TakeEventRows(&live, cut, &first);
  CHECK(index == std::vector<uint32_t>{kNone, 0});
  CHECK(first.labels.size() == 2);
  REQUIRE(live.labels.size() == 1);
  live.labels.end[0] = 109;  // the span grew
  auto finish = [&](Capture part, uint64_t from, uint64_t to) {
    Capture p = dictionaries;
    p.samples = std::move(part.samples);
    p.labels = std::move(part.labels);
    p.settings.start_time = from;
    p.settings.end_time = to;
    CompactDictionaries(&p);
    NormalizeEventRows(&p);
    REQUIRE(ValidateCapture(p).ok());
    return p;
  };
  Capture second;
  cut.before = 1000;
  open = {1};
  TakeEventRows(&live, cut, &second);
  std::vector<Capture> parts;
  parts.push_back(finish(std::move(first), 10, 106));
  parts.push_back(finish(std::move(second), 106, 1000));
  Capture merged = MergeCaptures(std::move(parts));
  REQUIRE(ValidateCapture(merged).ok());
  REQUIRE(merged.labels.size() == 2);
  CHECK(merged.labels.start[1] == 103);
  CHECK(merged.labels.end[1] == 109);
  CHECK(merged.samples.size() == 10);
}

TEST_CASE("Window: merging a capture with itself doubles its rows, not its dictionaries") {
  const Capture c = testing::MakeProbeCapture();
  std::vector<Capture> parts{c, c};
  Capture m = MergeCaptures(std::move(parts));
  REQUIRE(ValidateCapture(m).ok());
  CHECK(m.samples.size() == 2 * c.samples.size());
  CHECK(m.probe_records.size() == 2 * c.probe_records.size());
  CHECK(m.strings.size() == c.strings.size());
  CHECK(m.frames.size() == c.frames.size());
  CHECK(m.stacks.size() == c.stacks.size());
  CHECK(m.threads.size() == c.threads.size());
  CHECK(m.probe_sites.size() == c.probe_sites.size());
  CHECK(m.problems.size() == 1);
  CHECK(m.problems[0].count == 2 * c.problems[0].count);
  CHECK(m.off_cpu_short.total[0] == 2 * c.off_cpu_short.total[0]);
}

// The recorder's cut: the part copies only the dictionary rows it needs
// from the live capture, which then drops the tasks that ended before the
// cut (a generation ends).
Capture GenerationPart(Capture* live, uint64_t from, uint64_t before, bool short_counts) {
  Capture part;
  TimeCut cut;
  cut.before = before;
  cut.short_counts = short_counts;
  TakeEventRows(live, cut, &part);
  part.probe_sites = live->probe_sites;
  part.settings = live->settings;
  part.settings.start_time = from;
  part.settings.end_time = before;
  CopyNeededDictionaries(*live, from, before, &part);
  DropEndedEntities(live, before, {});
  DropUnusedCode(live);
  NormalizeEventRows(&part);
  return part;
}

TEST_CASE("Window: generations: a live capture loses ended tasks at each cut, parts merge whole") {
  Capture whole = testing::MakeProbeCapture();
  // A thread, a process with its thread and a mapping that end early.
  whole.threads.push_back({102, 0, 5, 10, 120});
  whole.processes.push_back({200, 1, 5, 0, 10, 110});
  whole.threads.push_back({200, ProcessId(whole.processes.size() - 1), 5, 10, 110});
  whole.mappings.push_back({ProcessId(whole.processes.size() - 1), 0, 0x1000, 0x2000, 0, 10, 110});
  REQUIRE(ValidateCapture(whole).ok());
  for (uint64_t a : {10, 103, 150, 500}) {
    for (uint64_t b : {104, 180, 700, 1001}) {
      if (b <= a) continue;
      CAPTURE(a);
      CAPTURE(b);
      Capture live = whole, old_live = whole;
      std::vector<Capture> parts;
      const uint64_t c = std::max<uint64_t>(b, 1000);
      parts.push_back(GenerationPart(&live, 10, a, false));
      REQUIRE(ValidateCapture(live).ok());
      parts.push_back(GenerationPart(&live, a, b, false));
      REQUIRE(ValidateCapture(live).ok());
      // What ended before the cut and nothing left needs is gone.
      if (b < 1000) {
        CHECK(live.threads.size() == whole.threads.size() - (b > 120 ? 2 : 0));
        CHECK(live.processes.size() == whole.processes.size() - (b > 110 ? 1 : 0));
        CHECK(live.mappings.size() == whole.mappings.size() - (b > 110 ? 1 : 0));
      }
      parts.push_back(GenerationPart(&live, b, c, true));
      // With no row left, no code is left either.
      CHECK(live.stacks.size() == 0);
      CHECK(live.frames.size() == 0);
      CHECK(live.functions.size() == 0);
      // Each part is the one a cut copying every dictionary row makes.
      std::vector<Capture> copied;
      copied.push_back(Part(whole, &old_live, 10, a));
      copied.push_back(Part(whole, &old_live, a, b));
      copied.push_back(Part(whole, &old_live, b, c, nullptr, /*short_counts=*/true));
      for (size_t i = 0; i < parts.size(); ++i) {
        REQUIRE(ValidateCapture(parts[i]).ok());
        CHECK(SampleTexts(parts[i]) == SampleTexts(copied[i]));
        CHECK(OffCpuTexts(parts[i]) == OffCpuTexts(copied[i]));
        CHECK(parts[i].threads.size() == copied[i].threads.size());
        CHECK(parts[i].processes.size() == copied[i].processes.size());
        CHECK(parts[i].mappings.size() == copied[i].mappings.size());
        CHECK(parts[i].stacks.size() == copied[i].stacks.size());
        CHECK(parts[i].strings == copied[i].strings);
      }
      Capture merged = MergeCaptures(std::move(parts));
      REQUIRE(ValidateCapture(merged).ok());
      CHECK(SampleTexts(merged) == SampleTexts(whole));
      CHECK(ProbeTexts(merged) == ProbeTexts(whole));
      CHECK(OffCpuTexts(merged) == OffCpuTexts(whole));
      CHECK(merged.threads.size() == whole.threads.size());
      CHECK(merged.processes.size() == whole.processes.size());
    }
  }
}
