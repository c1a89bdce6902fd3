// How microscope writes its figures for people: shares, quantities in their
// units, durations, and the report's header lines. The terminal's report
// (src/cli/report_view) prints these strings, and report's JSON carries them
// (the header's "lines", each cost's "text", each diff row's "delta_text")
// for the browser view to show as they are: a figure reads the same in both,
// written in one place.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/report.h"

namespace microscope::analysis {

// "12.34%": a share of a whole, two decimals.
std::string Share(double percent);

// "+1.23%" or "-0.50%": a change of share, signed.
std::string ShareChange(double percent_points);

// "1.234 s" for nanoseconds, "12.0 MiB" for bytes, a plain number for
// counts, "N unit" for another unit.
std::string Quantity(uint64_t value, std::string_view unit);

// A duration in the unit that shows it: "12.3 µs", "4.567 ms", "1.234 s"
// (off-CPU totals run from microseconds to minutes).
std::string Duration(uint64_t ns);

// A source file's path as a text table shows it beside a function: from
// the package on where it is one (past site-packages/, dist-packages/,
// node_modules/ or a Python's lib/pythonX.Y/: pygments/lexer.py), else
// from the program's `sources` directory on (ProgramSources), then
// shortened from the left to `width` characters ("..." first). A module's
// name (no '/') is as it is.
std::string DisplayPath(std::string_view path, std::string_view sources = {}, size_t width = 48);
// The directory (ending in '/') holding every absolute path of `paths`
// that is no package's (the program's own files), said once so that rows
// show the rest; empty when there are none or they share only "/".
std::string ProgramSources(std::span<const std::string_view> paths);

// The share of the whole capture's value (its metric) a filter kept.
double KeptPercent(const ReportModel& model);

// One line of a report's header: "duration" and "2.013 s". A label left
// empty continues the line above (one problem per line).
struct HeaderLine {
  std::string label;
  std::string text;
};

// The header's lines as `report` prints them: what ran, the metric and
// off-CPU totals, names, losses, stack quality, problems, notes, filter.
std::vector<HeaderLine> HeaderLines(const ReportModel& model);

}  // namespace microscope::analysis
