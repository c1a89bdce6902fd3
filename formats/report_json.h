// The report model (analysis/report.h) as one JSON document: what
// `microscope report --json` prints and what scripts and the e2e tests read.
// Keys and their order are the API: header, off_cpu, by_state, filter, kept, all,
// functions, syscalls, tree, inverted, threads, lanes, diff, source (each optional
// part only when the model has it). Lists are whole: the `top` and
// min-change pruning of the text tables does not apply, the trees' pruning
// by min-percent does. Beside the numbers, the text people read is there
// as the terminal prints it (analysis/presentation): the header's "lines"
// and each cost's "text" and each diff row's "delta_text".
#pragma once

#include <cstdio>
#include <string>

#include "analysis/report.h"

namespace microscope::formats {

// The document, indented by one space (compact without `indent`), invalid
// UTF-8 replaced.
// With `drawn_only` (serve's answers), the functions list only where a view
// that draws it was asked (the flat tables, a tree); report --json has it
// always.
std::string ReportJson(const analysis::ReportModel& model, bool indent = true,
                       bool drawn_only = false);

// ReportJson and a newline, to `out`.
void WriteReportJson(FILE* out, const analysis::ReportModel& model);

}  // namespace microscope::formats
