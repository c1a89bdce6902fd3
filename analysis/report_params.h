// A report query from named text parameters, as a URL's query string gives
// them (microscope serve's API): the words, ranges and defaults of report's
// options, under the options' names without their dashes (min_percent for
// --min-percent). Unknown names and bad values are errors that say which.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "analysis/filter.h"
#include "analysis/report.h"
#include "base/status.h"

namespace microscope::analysis {

struct ReportParams {
  ReportQuery query;
  std::string capture;  // which capture (capture=NAME); empty: the only one
  std::string diff;     // the capture to compare with (diff=NAME); empty: none
};

// views=flat,tree,inverted,threads,lanes,syscalls,zones,by_state,spans,
// stack_chart,markers; metric,
// granularity, look, inlines (on|off), collapse_recursion (0|1), merge and
// collapse (each repeatable), source,
// min_percent, top, lane_width; the filters thread, pid, time, focus,
// exclude, focus_path, zone; capture and diff. A name given twice is an error.
Result<ReportParams> ParseReportParams(
    const std::vector<std::pair<std::string, std::string>>& params);

// "thread worker-a, focus /re/": the filter as the user wrote it (`time`
// as given), for a report's header; empty when none.
std::string DescribeFilter(const FilterSpec& spec, const std::string& time);

}  // namespace microscope::analysis
