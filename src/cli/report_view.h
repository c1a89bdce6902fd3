// Renders the report model (analysis/report.h) as aligned terminal text,
// colored when asked: header, flat tables, trees, threads, lanes, off-CPU
// tables, system calls, diff. The numbers, names, pruning and order come
// from the model; this file only lays them out (columns, units, colors).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "analysis/report.h"

namespace microscope::cli {

void PrintTextReport(FILE* out, const analysis::ReportModel& model, bool color);

}  // namespace microscope::cli
