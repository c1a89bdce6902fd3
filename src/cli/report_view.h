// Renders the report's views (header, flat tables, trees, threads, lanes,
// diff) as aligned terminal text, colored when asked, or as one JSON
// document. The numbers come from analysis/; this file only lays them out.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "analysis/diff.h"
#include "analysis/filter.h"
#include "analysis/keys.h"
#include "analysis/lanes.h"
#include "analysis/profile.h"
#include "analysis/summary.h"
#include "analysis/syscalls.h"
#include "capture/capture.h"

namespace microscope::cli {

struct ReportViews {
  bool flat = false;
  bool tree = false;
  bool inverted = false;
  bool threads = false;
  bool lanes = false;
  bool syscalls = false;
  bool by_state = false;  // off-CPU time per state and thread, and who woke each thread
  double min_percent = 0.5;
  size_t top = 20;
  size_t lane_width = 60;
  bool color = false;
  std::string filter_text;  // shown in the header when a filter is active
};

struct ReportData {
  // The capture whose samples are the chosen metric (analysis::ForMetric);
  // the views read it, the header's off-CPU lines its off_cpu tables.
  const capture::Capture* capture;
  const analysis::FunctionKeys* keys;
  analysis::Metric metric = analysis::Metric::kCpu;
  analysis::Summary summary;
  analysis::OffCpuSummary off_cpu;                  // unfiltered, for the header
  std::optional<analysis::OffCpuSummary> by_state;  // filtered, for --by-state
  analysis::Flat flat;
  std::optional<analysis::CallTree> tree;
  std::optional<analysis::CallTree> inverted;
  std::vector<analysis::ThreadCost> threads;
  std::optional<analysis::Lanes> lanes;
  std::optional<analysis::DiffResult> diff;
  std::optional<analysis::SyscallTable> syscalls;
};

void PrintTextReport(FILE* out, const ReportData& data, const ReportViews& views);
void PrintJsonReport(FILE* out, const ReportData& data, const ReportViews& views);

// "1.234 s" for nanoseconds, "12.0 MiB" for bytes, plain numbers otherwise.
std::string FormatValue(uint64_t value, const std::string& unit);

}  // namespace microscope::cli
