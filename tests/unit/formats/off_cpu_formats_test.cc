#include <doctest.h>

#include <nlohmann/json.hpp>

#include <map>

#include "analysis/profile.h"
#include "formats/chrome.h"
#include "formats/folded.h"
#include "formats/gzip.h"
#include "formats/pprof.h"
#include "tests/unit/analysis/test_views.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;

namespace {

using testing::SelfValues;

std::string Chrome(const capture::Capture& c) {
  FunctionKeys keys(c);
  return testing::ToString([&](FILE* f) { formats::WriteChromeTrace(f, c, keys, {}); });
}

}  // namespace

TEST_CASE("pprof: off-CPU rows are an off_cpu sample type with a state label") {
  auto c = testing::MakeOffCpuCapture();
  auto bytes = formats::WritePprof(c, {});
  // Read as off_cpu: the same profile as the offcpu metric.
  auto off = formats::ReadPprof(bytes, "off_cpu");
  REQUIRE(off.ok());
  CHECK(off->settings.metric == "off_cpu");
  CHECK(off->settings.unit == "nanoseconds");
  auto expected = SelfValues(ForMetric(c, Metric::kOffCpu));
  CHECK(SelfValues(*off) == expected);
  CHECK(expected["schedule"] == 760);
  FunctionKeys keys(*off);
  CHECK(ComputeFlat(*off, keys).all.value == 1118);  // the stackless interval too
  // Read as cpu (the default): off-CPU rows weigh nothing and are skipped.
  auto cpu = formats::ReadPprof(bytes);
  REQUIRE(cpu.ok());
  CHECK(cpu->settings.metric == "cpu");
  CHECK(SelfValues(*cpu) == SelfValues(c));
  // The state label is written on off-CPU rows.
  auto raw = formats::Gunzip(bytes, 1 << 20);
  REQUIRE(raw.ok());
  std::string text(raw->begin(), raw->end());
  CHECK(text.find("state") != std::string::npos);
  CHECK(text.find("uninterruptible") != std::string::npos);
  CHECK_FALSE(formats::ReadPprof(bytes, "wall").ok());  // only with Metric::kWall
  auto wall = formats::ReadPprof(formats::WritePprof(c, {}, Metric::kWall), "wall");
  REQUIRE(wall.ok());
  FunctionKeys wall_keys(*wall);
  CHECK(ComputeFlat(*wall, wall_keys).all.value == 10000 + 1118);
}

TEST_CASE("pprof: a capture without off-CPU data keeps its two sample types") {
  auto bytes = formats::WritePprof(testing::MakeTestCapture(), {});
  CHECK_FALSE(formats::ReadPprof(bytes, "off_cpu").ok());
  CHECK(formats::ReadPprof(bytes, "cpu").ok());
}

TEST_CASE("Chrome trace: off-CPU intervals are spans on their thread's track") {
  auto c = testing::MakeOffCpuCapture();
  // Samples 1 ns apart weigh 1 ns here, so that CPU slices end at 110.
  for (size_t i = 0; i < c.samples.size(); ++i) c.samples.weight[i] = 1;
  auto j = nlohmann::json::parse(Chrome(c));
  std::map<std::string, nlohmann::json> blocked;  // "tid name" -> event
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    std::string name = e["name"];
    if (name.rfind("off-CPU (", 0) == 0) {
      CHECK(e["cat"] == "off-cpu");
      blocked[std::to_string(e["tid"].get<int>()) + " " + name + " " +
              std::to_string(e["ts"].get<double>())] = e;
    }
  }
  REQUIRE(blocked.size() == 4);
  // [200,500) of app: 0.190 µs after the start (10), 0.300 µs long.
  const auto& d = blocked.at("100 off-CPU (uninterruptible) 0.190000");
  CHECK(d["dur"].get<double>() == doctest::Approx(0.3));
  CHECK(d["args"]["state"] == "uninterruptible");
  CHECK(d["args"]["waker"] == "unknown");
  CHECK(d["args"]["user_frame"] == "cold");
  CHECK_FALSE(d["args"].contains("incomplete"));
  const auto& first = blocked.at("101 off-CPU (sleeping) 0.000000");
  CHECK(first["args"]["waker"] == "app (100)");
  CHECK(first["args"]["incomplete"].get<std::string>().find("before the recording began") !=
        std::string::npos);
  CHECK(first["args"]["no_user_stack"] == true);
  CHECK_FALSE(first["args"].contains("user_frame"));  // a kernel-only stack
  const auto& last = blocked.at("101 off-CPU (preempted) 0.590000");
  CHECK(last["args"]["incomplete"].get<std::string>().find("at the end") != std::string::npos);
  // Without off-CPU data there are no such spans.
  CHECK(Chrome(testing::MakeTestCapture()).find("off-CPU") == std::string::npos);
}

TEST_CASE("Folded: the offcpu metric in microseconds, as offcputime -f") {
  auto c = testing::MakeOffCpuCapture();
  for (auto* col : {&c.off_cpu.start, &c.off_cpu.end}) {
    for (uint64_t& t : *col) t *= 1000;
  }
  for (uint64_t& t : c.off_cpu_short.total) t *= 1000;
  c.settings.end_time = 1000000;
  capture::Capture m = ForMetric(c, Metric::kOffCpu);
  FunctionKeys keys(m);
  std::string text = formats::WriteFolded(m, keys, {}, false, formats::FoldedValue::kMicroseconds);
  CHECK(text ==
        "[off-CPU intervals under 1 µs, no stack] 58\n"
        "main;run;cold;schedule 370\n"
        "schedule 390\n");
  // Counting samples instead: one per interval, the short ones by count.
  CHECK(formats::WriteFolded(m, keys, {}, false) ==
        "[off-CPU intervals under 1 µs, no stack] 7\n"
        "main;run;cold;schedule 2\n"
        "schedule 1\n");
}
