#include <doctest.h>

#include <string>

#include "analysis/filter.h"
#include "analysis/labels.h"
#include "analysis/summary.h"
#include "formats/gzip.h"
#include "formats/pprof.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;

namespace {

// MakeTestCapture's ten samples (times 100..109, thread 0) with labels:
// v8.isolate "1" on 100..104 and "2" on 107..109 (105, 106 unlabeled), and
// python.gil "held" on 100..102 then "released" on 103..109.
capture::Capture Labeled() {
  capture::Capture c = testing::MakeTestCapture();
  auto intern = [&](const std::string& s) {
    c.strings.push_back(s);
    return capture::StringId(c.strings.size() - 1);
  };
  const capture::StringId isolate = intern(std::string(capture::kV8IsolateLabel));
  const capture::StringId gil = intern(std::string(capture::kGilLabel));
  const capture::StringId one = intern("1"), two = intern("2"), held = intern("held"),
                          released = intern("released");
  // Out of time order: the lookup sorts them.
  c.labels.thread = {0, 0, 0, 0};
  c.labels.key = {isolate, gil, isolate, gil};
  c.labels.value = {two, released, one, held};
  c.labels.start = {107, 103, 100, 100};
  c.labels.end = {109, 109, 104, 102};
  return c;
}

}  // namespace

TEST_CASE("SampleLabels: each key's span covering a time, none between spans") {
  const capture::Capture c = Labeled();
  const analysis::SampleLabels labels(c);
  CHECK(labels.Value(0, 100, capture::kV8IsolateLabel) == "1");
  CHECK(labels.Value(0, 104, capture::kV8IsolateLabel) == "1");
  CHECK_FALSE(labels.Value(0, 105, capture::kV8IsolateLabel).has_value());
  CHECK(labels.Value(0, 108, capture::kV8IsolateLabel) == "2");
  CHECK(labels.Value(0, 102, capture::kGilLabel) == "held");
  CHECK(labels.Value(0, 103, capture::kGilLabel) == "released");
  CHECK_FALSE(labels.Value(0, 99, capture::kGilLabel).has_value());
  CHECK_FALSE(labels.Value(1, 100, capture::kGilLabel).has_value());  // no such thread
  std::vector<size_t> at;
  labels.At(0, 101, &at);
  REQUIRE(at.size() == 2);  // one per key, in key order: python.gil, v8.isolate
  CHECK(c.str(c.labels.value[at[0]]) == "held");
  CHECK(c.str(c.labels.value[at[1]]) == "1");
}

TEST_CASE("ThreadTotals: GIL shares and the isolates a thread ran, from its labels") {
  const capture::Capture c = Labeled();
  std::vector<analysis::ThreadCost> t = analysis::ThreadTotals(c, analysis::SampleFilter{});
  REQUIRE(t.size() == 1);
  CHECK(t[0].gil_labeled == 10);
  CHECK(t[0].gil_held == 3);
  CHECK(t[0].isolate == "1,2");
}

TEST_CASE("pprof: every label a sample carried is one of its labels") {
  const capture::Capture c = Labeled();
  const std::vector<uint8_t> pb =
      formats::WritePprof(c, analysis::SampleFilter{}, analysis::Metric::kCpu);
  Result<std::vector<uint8_t>> raw = formats::Gunzip(pb, size_t(1) << 20);
  REQUIRE(raw.ok());
  const std::string bytes(raw->begin(), raw->end());
  CHECK(bytes.find("v8.isolate") != std::string::npos);
  CHECK(bytes.find("python.gil") != std::string::npos);
  CHECK(bytes.find("released") != std::string::npos);
  Result<capture::Capture> back = formats::ReadPprof(pb);
  REQUIRE(back.ok());
  uint64_t samples = 0;
  for (size_t i = 0; i < back->samples.size(); ++i) samples += back->samples.CountAt(i);
  CHECK(samples == 10);  // split by label sets, not lost
}

TEST_CASE("SampleFilter: --label and --gil keep the samples whose thread had the label then") {
  const capture::Capture c = Labeled();
  const analysis::FunctionKeys keys(c);
  auto kept = [&](const std::vector<std::string>& labels) {
    analysis::FilterSpec spec;
    for (const std::string& l : labels) REQUIRE(analysis::ParseLabel(l, &spec).ok());
    Result<analysis::SampleFilter> f = analysis::SampleFilter::Make(c, keys, spec);
    REQUIRE(f.ok());
    std::vector<uint64_t> times;
    for (size_t s = 0; s < c.samples.size(); ++s)
      if (f->Keep(c, s)) times.push_back(c.samples.time[s]);
    return times;
  };
  CHECK(kept({"python.gil=held"}) == std::vector<uint64_t>{100, 101, 102});  // the end is inside
  CHECK(kept({"python.gil=released"}) == std::vector<uint64_t>{103, 104, 105, 106, 107, 108, 109});
  CHECK(kept({"python.gil=released", "v8.isolate=1"}) == std::vector<uint64_t>{103, 104});
  CHECK(kept({"v8.isolate=3"}).empty());
  analysis::FilterSpec spec;
  CHECK_FALSE(analysis::ParseLabel("novalue", &spec).ok());
  REQUIRE(analysis::ParseLabel("user.name=x", &spec).ok());
  Result<analysis::SampleFilter> missing = analysis::SampleFilter::Make(c, keys, spec);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() ==
        "no label 'user.name' in the capture (labels: python.gil, "
        "v8.isolate)");
}
