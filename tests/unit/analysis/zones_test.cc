#include "analysis/zones.h"

#include <doctest.h>

#include "analysis/filter.h"
#include "analysis/keys.h"
#include "analysis/report.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;
using capture::kNone;

namespace {

const ZoneStats* StatsOf(const std::vector<ZoneStats>& all, capture::ProbeSiteId site) {
  for (const ZoneStats& s : all) {
    if (s.site == site) return &s;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("Zones: begin and end pair per thread and site; nesting only when proven") {
  const capture::Capture c = testing::MakeProbeCapture();
  const Zones z = PairZones(c);
  REQUIRE(z.occurrences.size() == 6);
  const auto& o = z.occurrences;
  // app: request [15,150) holding parse [95,104).
  CHECK(o[0].site == 0);
  CHECK(o[0].begin == 15);
  CHECK(o[0].end == 150);
  CHECK(o[0].parent == kNone);
  CHECK(o[1].site == 1);
  CHECK(o[1].end == 104);
  CHECK(o[1].parent == 0);
  CHECK(o[0].self_ns == 135 - 9);
  // worker: gen [160,180) and request [170,190) overlap: neither holds the other.
  CHECK(o[2].site == 5);
  CHECK(o[3].site == 0);
  CHECK(o[2].end == 180);
  CHECK(o[3].end == 190);
  CHECK(o[2].parent == kNone);
  CHECK(o[3].parent == kNone);
  CHECK(o[2].self_ns == 20);
  // parse from 210 never ended; request's end at 220 had no begin.
  CHECK(o[4].site == 1);
  CHECK(o[4].begin == 210);
  CHECK(o[4].end == kUnknownTime);
  CHECK(!o[4].complete());
  CHECK(o[5].site == 0);
  CHECK(o[5].begin == kUnknownTime);
  CHECK(o[5].end == 220);
}

TEST_CASE("Zones: an end closes its own site's latest open occurrence, not the innermost") {
  capture::Capture c = testing::MakeProbeCapture();
  // On worker, request opens inside gen and gen's end comes first: gen is
  // closed, request stays open until its own end.
  const Zones z = PairZones(c);
  CHECK(z.occurrences[2].end == 180);
  CHECK(z.occurrences[3].begin == 170);
  CHECK(z.occurrences[3].end == 190);
}

TEST_CASE("Zones: samples and off-CPU time go to the innermost open zone") {
  const capture::Capture c = testing::MakeProbeCapture();
  const Zones z = PairZones(c);
  std::vector<capture::ThreadId> threads(c.samples.thread.begin(), c.samples.thread.end());
  std::vector<uint64_t> times(c.samples.time.begin(), c.samples.time.end());
  const std::vector<uint32_t> inner = InnermostAt(c, z, threads, times);
  for (size_t i = 0; i < inner.size(); ++i) {
    CAPTURE(c.samples.time[i]);
    CHECK(inner[i] == (c.samples.time[i] < 104 ? 1u : 0u));
  }
  const std::vector<ZoneStats> stats = ZoneStatistics(c, z);
  const ZoneStats* request = StatsOf(stats, 0);
  const ZoneStats* parse = StatsOf(stats, 1);
  REQUIRE(request != nullptr);
  REQUIRE(parse != nullptr);
  CHECK(request->count == 2);
  CHECK(request->total_ns == 135 + 20);
  CHECK(request->unmatched_ends == 1);
  CHECK(request->open_at_end == 0);
  CHECK(request->samples == 6);
  CHECK(request->off_cpu_intervals == 1);
  CHECK(request->off_cpu_ns == 70);  // [20,90) inside request
  // Nearest-rank percentiles with the occurrence that has each.
  CHECK(request->p50.duration == 20);
  CHECK(request->p50.occurrence == 3);
  CHECK(request->p90.duration == 135);
  CHECK(request->max.occurrence == 0);
  CHECK(parse->count == 1);
  CHECK(parse->open_at_end == 1);
  CHECK(parse->samples == 4);
  // By total time: request, then gen and parse.
  CHECK(stats[0].site == 0);
}

TEST_CASE("Zones: --zone keeps the samples inside the zone at any depth") {
  const capture::Capture c = testing::MakeProbeCapture();
  FunctionKeys keys(c, Granularity::kFunction);
  auto kept = [&](const char* zone) {
    FilterSpec spec;
    spec.zone = zone;
    Result<SampleFilter> f = SampleFilter::Make(c, keys, spec);
    REQUIRE(f.ok());
    size_t n = 0;
    for (size_t i = 0; i < c.samples.size(); ++i) n += f->Keep(c, i);
    return n;
  };
  CHECK(kept("request") == 10);  // parse's samples are inside request too
  CHECK(kept("parse") == 4);
  CHECK(kept("gen") == 0);
  FilterSpec spec;
  spec.zone = "nosuch";
  Result<SampleFilter> f = SampleFilter::Make(c, keys, spec);
  REQUIRE(!f.ok());
  CHECK(f.status().message() == "no zone 'nosuch' in the capture (zones: request, parse, gen)");
}

TEST_CASE("Zones: the report's table names exemplars and counts the other records") {
  const capture::Capture c = testing::MakeProbeCapture();
  const ReportZones r = BuildZonesReport(c, 20);
  REQUIRE(r.rows.size() == 3);
  CHECK(r.rows[0].name == "request");
  CHECK(r.rows[0].file == "app.c");
  CHECK(r.rows[0].line == 10);
  CHECK(r.rows[0].max.tid == 100);
  CHECK(r.rows[0].max.at_ns == 5);  // began at 15, the recording at 10
  CHECK(r.rows[0].mean_ns == 77);
  CHECK(r.samples == 10);
  CHECK(r.samples_inside == 10);
  CHECK(r.marks == 1);
  CHECK(r.label_records == 2);
  CHECK(r.counter_records == 1);
}

TEST_CASE("Zones: the table counts what the report's filter keeps") {
  const capture::Capture c = testing::MakeProbeCapture();
  FunctionKeys keys(c, Granularity::kFunction);
  FilterSpec spec;
  spec.thread = "worker";
  const ReportZones worker = BuildZonesReport(c, 20, SampleFilter::Make(c, keys, spec).value());
  REQUIRE(worker.rows.size() == 2);  // gen and request on worker, 20 each: by name
  CHECK(worker.rows[0].name == "gen");
  CHECK(worker.rows[1].name == "request");
  CHECK(worker.rows[1].count == 1);
  CHECK(worker.rows[1].unmatched_ends == 0);  // app's, not worker's
  CHECK(worker.rows[1].samples == 0);
  CHECK(worker.samples == 0);
  FilterSpec early;
  early.to_ns = 100;  // up to 110, the recording having begun at 10
  const ReportZones e = BuildZonesReport(c, 20, SampleFilter::Make(c, keys, early).value());
  REQUIRE(e.rows.size() == 2);  // request and parse began by then; gen did not
  CHECK(e.rows[0].name == "request");
  CHECK(e.rows[0].count == 1);
  CHECK(e.rows[0].unmatched_ends == 0);  // its end without a begin came at 220
  CHECK(e.rows[0].samples == 6);
  CHECK(e.rows[1].name == "parse");
  CHECK(e.rows[1].open_at_end == 0);  // the one left open began at 210
  CHECK(e.rows[1].samples == 4);
  CHECK(e.samples == 10);  // samples 100..109, all by 110
}

TEST_CASE("Zones: innermost segments and probe labels for pprof") {
  capture::Capture c = testing::MakeProbeCapture();
  const std::vector<std::vector<ZoneSegment>> seg = InnermostSegments(c, PairZones(c));
  REQUIRE(seg[0].size() == 4);
  CHECK(seg[0][0].begin == 15);
  CHECK(seg[0][0].end == 95);
  CHECK(seg[0][1].begin == 95);
  CHECK(seg[0][1].end == 104);
  CHECK(seg[0][2].begin == 104);
  CHECK(seg[0][2].end == 150);
  CHECK(seg[0][3].begin == 210);
  CHECK(seg[0][3].end == 1000);  // open to its thread's end
  // worker: gen, then request once it began later, to its end.
  REQUIRE(seg[1].size() == 2);
  CHECK(seg[1][0].end == 170);
  CHECK(seg[1][1].begin == 170);
  CHECK(seg[1][1].end == 190);
  AddProbeLabelSpans(&c);
  size_t zone_spans = 0, route_spans = 0;
  for (size_t i = 0; i < c.labels.size(); ++i) {
    const std::string& key = c.str(c.labels.key[i]);
    zone_spans += key == "zone";
    if (key == "route") {
      ++route_spans;
      CHECK(c.str(c.labels.value[i]) == "/a");
      CHECK(c.labels.start[i] == 60);
      CHECK(c.labels.end[i] == 229);
    }
  }
  CHECK(zone_spans == 6);
  CHECK(route_spans == 1);
}

TEST_CASE("Zones: lane buckets show the zone that held most of each") {
  const capture::Capture c = testing::MakeProbeCapture();
  const std::vector<ProbeBuckets> b = ProbeLaneBuckets(c, 0, 50, 5);
  REQUIRE(b[0].zone.size() == 5);
  CHECK(b[0].zone[0] == 0);      // [0,50): request from 15
  CHECK(b[0].zone[1] == 0);      // [50,100): request 45, parse 5
  CHECK(b[0].zone[2] == 0);      // [100,150): parse 4, request 46
  CHECK(b[0].zone[3] == kNone);  // [150,200)
  CHECK(b[0].events[1] == kBucketLabel);
  CHECK(b[0].events[2] == kBucketMark);
  CHECK(b[1].zone[3] == 0);  // worker: gen innermost for 10, request for 20
}
