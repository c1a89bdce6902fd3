// Chrome trace JSON read (formats/trace_json) and placed on a capture's
// clock (formats/trace_place), and the placed trace through the capture
// file and back.
#include <doctest.h>

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "analysis/keys.h"
#include "capture/container.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "formats/chrome.h"
#include "formats/cpuprofile.h"
#include "formats/gzip.h"
#include "formats/trace_json.h"
#include "formats/trace_place.h"
#include "tests/unit/analysis/test_views.h"
#include "tests/unit/capture/test_capture.h"

namespace microscope::formats {
namespace {

using capture::TraceEventKind;
using capture::TraceTrackKind;

std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

ParsedTrace Read(std::string_view text) {
  Result<ParsedTrace> t = ReadTraceJson(Bytes(text));
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  return std::move(t).value();
}

std::string ReadError(std::string_view text, const TraceJsonLimits& limits = {}) {
  Result<ParsedTrace> t = ReadTraceJson(Bytes(text), limits);
  REQUIRE(!t.ok());
  return t.status().message();
}

// The index of the event named `name` (the first).
size_t Event(const capture::Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.events.size(); ++i) {
    if (t.str(t.events.name[i]) == name) return i;
  }
  FAIL("no event " << name);
  return 0;
}

const capture::TraceTrack& TrackOf(const capture::Trace& t, std::string_view name) {
  return t.tracks[t.events.track[Event(t, name)]];
}

// An array-form trace as torch.autograd and Chrome write it: metadata
// anywhere, begin/end pairs, instants, a counter with two series.
constexpr std::string_view kArray = R"([
 {"name": "thread_name", "ph": "M", "pid": 7, "tid": 8, "args": {"name": "worker"}},
 {"name": "outer", "ph": "B", "ts": 10, "pid": 7, "tid": 8, "cat": "op"},
 {"name": "inner", "ph": "X", "ts": 12.5, "dur": 3, "pid": 7, "tid": 8, "args": {"n": 1}},
 {"name": "outer", "ph": "E", "ts": 20, "pid": 7, "tid": 8},
 {"name": "first", "ph": "X", "ts": 1, "dur": 2, "pid": "CPU functions", "tid": 1},
 {"name": "tick", "ph": "i", "ts": 14, "pid": 7, "tid": 8, "s": "t"},
 {"name": "mem", "ph": "C", "ts": 15, "pid": 7, "args": {"used": 5, "free": "7.5"}},
 {"name": "stray", "ph": "E", "ts": 30, "pid": 7, "tid": 9},
 {"name": "obj", "ph": "O", "ts": 31, "pid": 7, "tid": 9, "id": "0x1"},
 {"name": "process_name", "ph": "M", "pid": 7, "args": {"name": "trainer"}}
])";

TEST_CASE("trace JSON: the array form's spans, instants, counters and names") {
  ParsedTrace p = Read(kArray);
  const capture::Trace& t = p.trace;
  CHECK(t.format == "chrome-json");
  // In start order: first(1) outer(10) inner(12.5) tick(14) mem(15) x2.
  REQUIRE(t.events.size() == 6);
  CHECK(t.str(t.events.name[0]) == "first");
  CHECK(p.own_start[0] == 1000);
  const size_t outer = Event(t, "outer");
  CHECK(p.own_start[outer] == 10000);
  CHECK(t.events.duration[outer] == 10000);
  CHECK(t.events.DepthAt(outer) == 0);
  const size_t inner = Event(t, "inner");
  CHECK(p.own_start[inner] == 12500);
  CHECK(t.events.DepthAt(inner) == 1);
  CHECK(t.str(t.events.ArgsAt(inner)) == R"({"n":1})");
  CHECK(t.str(t.events.CategoryAt(outer)) == "op");
  CHECK(p.resolution_ns == 1);  // 12.5 µs
  CHECK(t.events.kind[Event(t, "tick")] == TraceEventKind::kInstant);
  // The thread's and process's names from metadata given before and after.
  CHECK(TrackOf(t, "outer").name == "worker");
  CHECK(TrackOf(t, "outer").group == "trainer");
  CHECK(TrackOf(t, "outer").trace_pid == "7");
  CHECK(TrackOf(t, "first").group == "CPU functions");
  CHECK(TrackOf(t, "first").name == "tid 1");
  CHECK(TrackOf(t, "tick").name == "worker");
  // One counter track per series.
  const size_t used = Event(t, "mem used");
  CHECK(t.events.kind[used] == TraceEventKind::kCounter);
  CHECK(t.events.ValueAt(used) == 5);
  CHECK(t.events.ValueAt(Event(t, "mem free")) == 7.5);
  CHECK(TrackOf(t, "mem used").kind == TraceTrackKind::kCounter);
  CHECK(t.events.track[used] != t.events.track[Event(t, "mem free")]);
  // What was left out is counted and said.
  CHECK(t.skipped == 2);
  std::string notes;
  for (const std::string& n : t.notes) notes += n + "\n";
  CHECK(notes.find("1 end events had no begin") != std::string::npos);
  CHECK(notes.find("phase \"O\" are not imported") != std::string::npos);
}

// A Kineto trace as PyTorch's profiler writes it with a GPU: the object
// form, its base time, device properties, a launch and its kernel linked by
// a flow and by their correlation ids, a memcpy linked by correlation only.
constexpr std::string_view kKineto = R"({
 "schemaVersion": 1,
 "deviceProperties": [{"id": 0, "name": "Fake GPU", "totalGlobalMem": 1024}],
 "displayTimeUnit": "ms",
 "baseTimeNanoseconds": 1700000000000000000,
 "traceEvents": [
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4242, "tid": 4243,
   "ts": 100.000, "dur": 50.500, "args": {"External id": 3}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4243,
   "ts": 110.250, "dur": 5.000, "args": {"correlation": 77, "External id": 3}},
  {"ph": "s", "id": 77, "pid": 4242, "tid": 4243, "ts": 110.250, "cat": "ac2g", "name": "ac2g"},
  {"ph": "X", "cat": "kernel", "name": "gemm_kernel", "pid": 0, "tid": 7,
   "ts": 120.000, "dur": 30.000, "args": {"correlation": 77, "stream": 7, "device": 0}},
  {"ph": "f", "id": 77, "pid": 0, "tid": 7, "ts": 120.000, "cat": "ac2g", "name": "ac2g", "bp": "e"},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 4242, "tid": 4243,
   "ts": 130.000, "dur": 2.000, "args": {"correlation": 78}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 8,
   "ts": 140.000, "dur": 4.000, "args": {"correlation": 78}},
  {"name": "process_name", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"name": "python"}},
  {"name": "process_labels", "ph": "M", "ts": 0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
  {"name": "thread_name", "ph": "M", "ts": 0, "pid": 0, "tid": 7, "args": {"name": "stream 7 "}},
  {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 200.000}
 ],
 "traceName": "run.pt.trace.json"
})";

TEST_CASE("trace JSON: Kineto's object form, GPU streams and launch-to-kernel links") {
  ParsedTrace p = Read(kKineto);
  const capture::Trace& t = p.trace;
  CHECK(t.format == "kineto");
  REQUIRE(p.base_time.has_value());
  CHECK(*p.base_time == 1700000000000000000);
  CHECK(t.device_properties.find("Fake GPU") != std::string::npos);
  const capture::TraceTrack& kernel = TrackOf(t, "gemm_kernel");
  CHECK(kernel.kind == TraceTrackKind::kDevice);
  CHECK(kernel.name == "stream 7");
  CHECK(kernel.group == "python [GPU 0]");
  CHECK(TrackOf(t, "Memcpy HtoD").kind == TraceTrackKind::kDevice);
  CHECK(TrackOf(t, "aten::mm").kind == TraceTrackKind::kThread);
  CHECK(TrackOf(t, "Record Window End").group == "global");
  // The launch is inside aten::mm; the flow and the correlation give one
  // link, the memcpy's correlation another.
  CHECK(t.events.DepthAt(Event(t, "cudaLaunchKernel")) == 1);
  REQUIRE(t.flows.size() == 2);
  CHECK(t.flows.from[0] == Event(t, "cudaLaunchKernel"));
  CHECK(t.flows.to[0] == Event(t, "gemm_kernel"));
  CHECK(t.str(t.flows.name[0]) == "ac2g");
  CHECK(t.flows.id[0] == 77);
  CHECK(t.flows.from[1] == Event(t, "cudaMemcpyAsync"));
  CHECK(t.flows.to[1] == Event(t, "Memcpy HtoD"));
  CHECK(t.str(t.flows.name[1]) == "correlation");
  CHECK(p.own_start[Event(t, "cudaLaunchKernel")] == 110250);
}

TEST_CASE("trace JSON: a flow's end without bp=e binds to the next slice to begin") {
  ParsedTrace p = Read(R"([
    {"ph": "X", "name": "send", "ts": 1, "dur": 5, "pid": 1, "tid": 1},
    {"ph": "s", "name": "msg", "cat": "ipc", "id": 5, "ts": 2, "pid": 1, "tid": 1},
    {"ph": "f", "name": "msg", "cat": "ipc", "id": 5, "ts": 9, "pid": 1, "tid": 2},
    {"ph": "X", "name": "before", "ts": 3, "dur": 1, "pid": 1, "tid": 2},
    {"ph": "X", "name": "receive", "ts": 10, "dur": 5, "pid": 1, "tid": 2}])");
  REQUIRE(p.trace.flows.size() == 1);
  CHECK(p.trace.flows.from[0] == Event(p.trace, "send"));
  CHECK(p.trace.flows.to[0] == Event(p.trace, "receive"));
}

TEST_CASE("trace JSON: async spans on tracks of their own, keyed by category and id") {
  ParsedTrace p = Read(R"({"traceEvents": [
    {"ph": "b", "name": "load", "cat": "net", "id": "0x1", "ts": 1, "pid": 3, "tid": 4},
    {"ph": "b", "name": "load", "cat": "disk", "id": "0x1", "ts": 2, "pid": 3, "tid": 5},
    {"ph": "n", "name": "step", "cat": "net", "id": "0x1", "ts": 3, "pid": 3, "tid": 4},
    {"ph": "e", "name": "load", "cat": "disk", "id": "0x1", "ts": 4, "pid": 3, "tid": 5},
    {"ph": "e", "name": "load", "cat": "net", "id": "0x1", "ts": 9, "pid": 3, "tid": 6}]})");
  const capture::Trace& t = p.trace;
  REQUIRE(t.events.size() == 3);
  CHECK(t.events.kind[0] == TraceEventKind::kSpan);
  CHECK(t.events.duration[0] == 8000);  // net: 1 to 9, ended on another thread
  CHECK(t.events.duration[1] == 2000);  // disk: 2 to 4
  CHECK(t.events.track[0] != t.events.track[1]);
  CHECK(t.tracks[t.events.track[0]].kind == TraceTrackKind::kAsync);
  CHECK(t.events.kind[2] == TraceEventKind::kInstant);
  CHECK(t.events.track[2] == t.events.track[0]);
}

TEST_CASE("trace JSON: gzipped, and an array cut short read to its last whole event") {
  const std::string text(kArray);
  std::vector<uint8_t> gz = Gzip(Bytes(text));
  Result<ParsedTrace> t = ReadTraceJson(gz);
  REQUIRE(t.ok());
  CHECK(t->trace.events.size() == 6);
  ParsedTrace cut = Read(R"([{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1, "tid": 1},
                            {"ph": "X", "name": "b", "ts": 2, "dur": 1, "pid": 1, "tid": 1},)");
  CHECK(cut.trace.events.size() == 2);
  CHECK(cut.trace.notes.back().find("no closing bracket") != std::string::npos);
}

TEST_CASE("trace JSON: malformed input is an error naming the byte or the event") {
  CHECK(ReadError(R"({"traceEvents": [{"ph": "X", "ts": 1,}]})").find("byte 38: malformed JSON") ==
        0);
  CHECK(ReadError(R"([{"ph": "X", "ts": 1}, {"ts": 2}])") == "event 1: no \"ph\" (its phase)");
  CHECK(ReadError(R"([{"ph": "X", "ts": "soon"}])").find("event 0: \"ts\"") == 0);
  CHECK(ReadError(R"([{"ph": "X", "ts": 1e300}])").find("not a time") != std::string::npos);
  CHECK(ReadError(R"([{"ph": "B", "ts": 5, "pid": 1}, {"ph": "E", "ts": 4, "pid": 1}])") ==
        "event 1: ends before its begin event");
  CHECK(ReadError(R"([1, 2])") == "event 0: not a JSON object");
  CHECK(ReadError(R"({"other": []})").find("without traceEvents") != std::string::npos);
  CHECK(ReadError("hello").find("not a Chrome trace") == 0);
  TraceJsonLimits small;
  small.max_events = 2;
  CHECK(ReadError(R"([{"ph": "i", "ts": 1}, {"ph": "i", "ts": 2}, {"ph": "i", "ts": 3}])", small)
            .find("event 2: more than 2 events") == 0);
  small.max_bytes = 8;
  CHECK(ReadError(R"([{"ph": "i", "ts": 1}])", small).find("the import's limit") !=
        std::string::npos);
}

capture::Capture ProbeCapture() {
  capture::Capture c = testing::MakeProbeCapture();
  c.settings.realtime_start = 1700000000000000000ull - 50000;  // wall clock at start_time (10)
  return c;
}

TEST_CASE("placing a trace: its base time against the capture's wall-clock start") {
  capture::Capture c = ProbeCapture();
  PlaceOptions o;
  o.digest = "d1";
  Result<capture::Trace> t = PlaceTrace(c, Read(kKineto), o);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK(t->clock == "base-time");
  // base + 100 µs is 150 µs after the capture's wall-clock start.
  CHECK(t->events.start[Event(*t, "aten::mm")] == 10 + 150000);
  REQUIRE(t->uncertainty.has_value());
  CHECK(*t->uncertainty == 1 + 1000);
  CHECK(t->notes.back().find("outside the recording's window") != std::string::npos);
  // Imported twice: refused.
  c.traces.push_back(*t);
  Result<capture::Trace> again = PlaceTrace(c, Read(kKineto), o);
  REQUIRE(!again.ok());
  CHECK(again.status().message().find("holds this trace already") != std::string::npos);
}

TEST_CASE("placing a trace: no clock stated keeps it on its own axis, saying how to place it") {
  capture::Capture c = ProbeCapture();
  Result<capture::Trace> t = PlaceTrace(c, Read(kArray), {});
  REQUIRE(t.ok());
  CHECK(t->OwnAxis());
  CHECK(t->events.start[0] == 0);  // its first event
  CHECK(t->events.start[Event(*t, "outer")] == 9000);
  CHECK(t->clock_note.find("--anchor") != std::string::npos);
  for (const capture::TraceTrack& k : t->tracks) CHECK(k.pid == 0);  // not on the capture's clock
  // A capture without a wall-clock start cannot take Kineto's base time.
  c.settings.realtime_start.reset();
  Result<capture::Trace> k = PlaceTrace(c, Read(kKineto), {});
  REQUIRE(k.ok());
  CHECK(k->OwnAxis());
  CHECK(k->clock_note.find("does not know its own wall-clock start") != std::string::npos);
}

TEST_CASE("placing a trace: by an anchor both sides recorded, which maps its thread") {
  capture::Capture c = ProbeCapture();  // the mark "tick" at 105 on app (pid 100, tid 100)
  ParsedTrace p = Read(R"([
    {"ph": "X", "name": "tick", "ts": 0.000, "dur": 0.010, "pid": "CPU functions", "tid": 1},
    {"ph": "X", "name": "op", "ts": 0.050, "dur": 0.100, "pid": "CPU functions", "tid": 1},
    {"ph": "X", "name": "other", "ts": 0.060, "dur": 0.010, "pid": "CPU functions", "tid": 2}])");
  PlaceOptions o;
  o.anchor = "tick";
  Result<capture::Trace> t = PlaceTrace(c, p, o);
  REQUIRE_MESSAGE(t.ok(), t.status().message());
  CHECK(t->clock == "anchor");
  CHECK(t->events.start[Event(*t, "tick")] == 100);  // its middle (105) at the mark
  CHECK(t->events.start[Event(*t, "op")] == 150);
  REQUIRE(t->uncertainty.has_value());
  CHECK(*t->uncertainty == 5 + 1);
  const capture::TraceTrack& op = TrackOf(*t, "op");
  CHECK(op.pid == 100);
  CHECK(op.tid == 100);
  CHECK(op.mapped_by == "anchor");
  CHECK(TrackOf(*t, "other").pid == 100);
  CHECK(TrackOf(*t, "other").tid == 0);
  o.anchor = "nothing";
  Result<capture::Trace> none = PlaceTrace(c, p, o);
  REQUIRE(!none.ok());
  CHECK(none.status().message() ==
        "--anchor nothing: 0 events of that name in the trace and 0 probes marks or zones in the "
        "capture (both sides need one)");
}

TEST_CASE("placing a trace: an offset, a stated clock, maps, and placements refused") {
  capture::Capture c = ProbeCapture();
  PlaceOptions o;
  o.offset = 40;
  Result<capture::Trace> t = PlaceTrace(c, Read(kArray), o);
  REQUIRE(t.ok());
  CHECK(t->clock == "offset");
  CHECK(t->events.start[0] == 10 + 40 + 1000);
  CHECK(!t->uncertainty.has_value());
  o.offset.reset();
  o.clock = "monotonic";
  Result<formats::TraceMap> map = ParseTraceMap("CPU functions=100:100");
  REQUIRE(map.ok());
  o.maps = {*map};
  t = PlaceTrace(c, Read(kArray), o);
  REQUIRE(t.ok());
  CHECK(t->events.start[0] == 1000);
  CHECK(TrackOf(*t, "first").pid == 100);
  CHECK(TrackOf(*t, "first").tid == 100);
  CHECK(TrackOf(*t, "first").mapped_by == "user");
  o.maps = {*ParseTraceMap("7/8=100:101")};  // the worker thread
  t = PlaceTrace(c, Read(kArray), o);
  REQUIRE(t.ok());
  CHECK(TrackOf(*t, "outer").tid == 101);
  CHECK(TrackOf(*t, "first").pid == 0);
  o.maps = {*ParseTraceMap("7=555")};
  CHECK(PlaceTrace(c, Read(kArray), o).status().message() ==
        "--map: the capture has no process 555");
  o.maps = {*ParseTraceMap("9=100")};
  CHECK(PlaceTrace(c, Read(kArray), o).status().message() ==
        "--map: the trace has no process \"9\"");
  CHECK(!ParseTraceMap("x=").ok());
  CHECK(!ParseTraceMap("=5").ok());
  CHECK(!ParseTraceMap("x=5:y").ok());
  o.maps.clear();
  o.clock.clear();
  o.offset = -1000000;
  CHECK(PlaceTrace(c, Read(kArray), o).status().message().find("the placement cannot be right") !=
        std::string::npos);
  o.anchor = "tick";
  CHECK(PlaceTrace(c, Read(kArray), o).status().message().find("give one of") == 0);
}

TEST_CASE("an imported trace goes through the capture file whole") {
  capture::Capture c = ProbeCapture();
  PlaceOptions o;
  o.path = "run.json";
  o.digest = "abc";
  o.imported_at = 123;
  Result<capture::Trace> t = PlaceTrace(c, Read(kKineto), o);
  REQUIRE(t.ok());
  c.traces.push_back(*t);
  REQUIRE(capture::ValidateCapture(c).ok());
  Result<capture::Capture> back = capture::ParseCapturePayload(capture::SerializeCapture(c));
  REQUIRE_MESSAGE(back.ok(), back.status().message());
  REQUIRE(back->traces.size() == 1);
  const capture::Trace& r = back->traces[0];
  CHECK(r.path == "run.json");
  CHECK(r.digest == "abc");
  CHECK(r.imported_at == 123);
  CHECK(r.clock == t->clock);
  CHECK(r.offset == t->offset);
  CHECK(r.uncertainty == t->uncertainty);
  CHECK(r.tracks == t->tracks);
  CHECK(r.strings == t->strings);
  CHECK(r.events.start == t->events.start);
  CHECK(r.events.duration == t->events.duration);
  CHECK(r.events.args == t->events.args);
  CHECK(r.flows.to == t->flows.to);
  CHECK(r.notes == t->notes);
  CHECK(r.device_properties == t->device_properties);
  // A reference out of range is caught by the reader's checks.
  c.traces[0].flows.to[0] = 999;
  Status bad = capture::ValidateCapture(c);
  CHECK(bad.message() == "traces[0].flows[0].to = 999 is out of range (6 events)");
  c.traces[0].flows.to[0] = 0;
  c.traces[0].events.start[0] = 1u << 30;
  CHECK(capture::ValidateCapture(c).message() == "traces[0].events[1].start goes back in time");
}

TEST_CASE("the Chrome export carries an imported trace, and any args text as valid JSON") {
  capture::Capture c = ProbeCapture();
  PlaceOptions o;
  o.path = "run.json";
  Result<capture::Trace> t = PlaceTrace(c, Read(kKineto), o);
  REQUIRE(t.ok());
  c.traces.push_back(*t);
  // A capture made otherwise may hold any text as an event's arguments.
  capture::Trace& tr = c.traces[0];
  const size_t mm = Event(tr, "aten::mm");
  tr.strings.push_back(R"(}, "ph": "B", "x": {)");
  tr.events.args[mm] = uint32_t(tr.strings.size() - 1);
  analysis::FunctionKeys keys(c);
  const nlohmann::json j =
      nlohmann::json::parse(testing::ToString([&](FILE* f) { WriteChromeTrace(f, c, keys, {}); }));
  size_t imported = 0, flows = 0;
  for (const auto& e : j["traceEvents"]) {
    const std::string cat = e.value("cat", "");
    if (cat.rfind("imported", 0) != 0) continue;
    ++imported;
    if (e["ph"] == "s") ++flows;
    if (e["name"] == "aten::mm") {
      CHECK(e["ph"] == "X");
      CHECK(e["args"]["text"] == R"(}, "ph": "B", "x": {)");
    }
    if (e["name"] == "gemm_kernel") CHECK(e["args"]["stream"] == 7);
  }
  CHECK(imported == tr.events.size() + 2 * tr.flows.size());
  CHECK(flows == tr.flows.size());
}

constexpr std::string_view kProfile = R"json({"nodes":[
  {"id":1,"callFrame":{"functionName":"(root)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":0,"children":[2,4]},
  {"id":2,"callFrame":{"functionName":"main","scriptId":"1","url":"file:///a.js","lineNumber":9,"columnNumber":0},"hitCount":1,"children":[3]},
  {"id":3,"callFrame":{"functionName":"","scriptId":"1","url":"file:///a.js","lineNumber":2,"columnNumber":4},"hitCount":2},
  {"id":4,"callFrame":{"functionName":"(idle)","scriptId":"0","url":"","lineNumber":-1,"columnNumber":-1},"hitCount":1}],
 "startTime":1000,"endTime":1100,"samples":[3,2,3,4],"timeDeltas":[10,20,30,-5]})json";

TEST_CASE("V8's .cpuprofile: samples with their call paths, weighed by the time to the next") {
  CHECK(LooksLikeCpuProfile(kProfile));
  CHECK(!LooksLikeCpuProfile(kKineto));
  Result<capture::Capture> c = ReadCpuProfile(kProfile);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  const capture::Samples& s = c->samples;
  REQUIRE(s.size() == 4);
  // 1010, 1030, 1060, and 1060 again (a delta back in time kept at the last).
  CHECK(s.time[0] == 1010000);
  CHECK(s.time[2] == 1060000);
  CHECK(s.time[3] == 1060000);
  CHECK(s.weight[0] == 20000);
  CHECK(s.weight[1] == 30000);
  CHECK(s.weight[3] == 40000);  // to the profile's end
  // The first sample: the anonymous function (line 3) called from main (line 10).
  const capture::Frame& leaf = c->frames[c->stacks.frame[s.stack[0]]];
  CHECK(c->str(c->functions[leaf.function].name) == "(anonymous)");
  CHECK(c->str(leaf.file) == "file:///a.js");
  CHECK(leaf.line == 3);
  const capture::StackId parent = c->stacks.parent[s.stack[0]];
  REQUIRE(parent != capture::kNone);
  CHECK(c->str(c->functions[c->frames[c->stacks.frame[parent]].function].name) == "main");
  CHECK(c->stacks.parent[parent] == capture::kNone);  // (root) is no frame
  CHECK(c->settings.notes.back().find("1 samples went back in time") != std::string::npos);
  auto error = [](std::string_view text) { return ReadCpuProfile(text).status().message(); };
  CHECK(
      error(
          R"({"nodes":[{"id":1,"callFrame":{},"children":[1]}],"samples":[1],"timeDeltas":[1],"startTime":0,"endTime":1})") ==
      "not a V8 CPU profile: node 1 is deeper than 4096 frames, or in a cycle");
  CHECK(
      error(
          R"({"nodes":[{"id":1,"callFrame":{}}],"samples":[2],"timeDeltas":[1],"startTime":0,"endTime":1})") ==
      "not a V8 CPU profile: samples[0] names no node");
  CHECK(
      error(
          R"({"nodes":[{"id":1,"callFrame":{}}],"samples":[1],"timeDeltas":[],"startTime":0,"endTime":1})") ==
      "not a V8 CPU profile: \"timeDeltas\" is not one per sample");
  CHECK(error(R"({"nodes":[{"id":1,"callFrame":{}},{"id":1,"callFrame":{}}]})") ==
        "not a V8 CPU profile: nodes[1]: id 1 twice");
  CHECK(error(R"({"nodes": [)").find("malformed JSON") != std::string::npos);
}

}  // namespace
}  // namespace microscope::formats
