#include <doctest.h>

#include "analysis/report_params.h"

using namespace microscope::analysis;
using Params = std::vector<std::pair<std::string, std::string>>;

TEST_CASE("ParseReportParams: report's options under their names") {
  auto p = ParseReportParams({{"capture", "a.mscap"},
                              {"diff", "b.mscap"},
                              {"views", "tree,threads,lanes,by_state"},
                              {"metric", "wall"},
                              {"granularity", "line"},
                              {"look", "js"},
                              {"inlines", "off"},
                              {"collapse_recursion", "1"},
                              {"min_percent", "0.25"},
                              {"top", "7"},
                              {"lane_width", "300"},
                              {"thread", "worker-a"},
                              {"pid", "42"},
                              {"time", "1s..2.5s"},
                              {"focus", "^f$"},
                              {"exclude", "g"}});
  REQUIRE(p.ok());
  const ReportQuery& q = p->query;
  CHECK(p->capture == "a.mscap");
  CHECK(p->diff == "b.mscap");
  CHECK((q.views.tree && q.views.threads && q.views.lanes && q.views.by_state));
  CHECK_FALSE((q.views.flat || q.views.inverted || q.views.syscalls));
  CHECK(q.metric == Metric::kWall);
  CHECK(q.granularity == Granularity::kLine);
  CHECK(q.look == Look::kInterpreted);
  CHECK_FALSE(q.inlines);
  CHECK(q.collapse_recursion);
  CHECK(q.min_percent == 0.25);
  CHECK(q.top == 7);
  CHECK(q.lane_width == 300);
  CHECK(q.filter.thread == "worker-a");
  CHECK(*q.filter.pid == 42);
  CHECK(*q.filter.from_ns == 1'000'000'000);
  CHECK(*q.filter.to_ns == 2'500'000'000);
  CHECK(q.filter_text == "pid 42, thread worker-a, time 1s..2.5s, focus /^f$/, exclude /g/");
  // None: report's defaults.
  auto none = ParseReportParams({});
  REQUIRE(none.ok());
  CHECK(none->query.min_percent == ReportQuery{}.min_percent);
  CHECK(none->query.top == ReportQuery{}.top);
  CHECK(none->query.filter.empty());
}

TEST_CASE("ParseReportParams: bad names and values say which") {
  const std::vector<std::pair<Params, std::string>> bad = {
      {{{"colour", "red"}}, "unknown parameter 'colour'"},
      {{{"top", "3"}, {"top", "4"}}, "given twice"},
      {{{"views", ""}}, "views"},
      {{{"views", "tree,"}}, "views"},
      {{{"metric", "gpu"}}, "metric"},
      {{{"min_percent", "nan"}}, "min_percent"},
      {{{"min_percent", "-1"}}, "min_percent"},
      {{{"min_percent", "1e3"}}, "min_percent"},
      {{{"top", "12abc"}}, "top"},
      {{{"top", "-1"}}, "top"},
      {{{"lane_width", "3"}}, "lane_width"},
      {{{"pid", "0"}}, "pid"},
      {{{"inlines", "yes"}}, "inlines"},
      {{{"collapse_recursion", "true"}}, "collapse_recursion"},
      {{{"time", "soon"}}, "time"},
  };
  for (const auto& [params, expected] : bad) {
    const std::string& says = expected;  // clang 14's CAPTURE cannot capture a structured binding
    auto p = ParseReportParams(params);
    CAPTURE(says);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().message().find(says) != std::string::npos);
  }
}
