// How query results are written: an aligned table for a person at a
// terminal, CSV (RFC 4180), JSON (an array of objects per statement) or
// NDJSON (an object per line). The same choice for `query`, `triage` and
// `doctor`: JSON when stdout is not a terminal, unless told otherwise.
#pragma once

#include <cstdio>
#include <memory>
#include <string_view>

#include "sql/database.h"

namespace microscope::sql {

enum class OutputFormat : uint8_t { kTable, kCsv, kJson, kNdjson };

// "table", "csv", "json", "ndjson"; false for another word.
bool ParseOutputFormat(std::string_view text, OutputFormat* format);

// The format a command writes in: `chosen` when the user chose one
// ("" : none), else kTable on a terminal (or with --human) and kJson when
// stdout is a pipe or a file.
OutputFormat ChooseFormat(std::string_view chosen, bool human, bool stdout_is_terminal);

// A sink writing to `out` in `format`.
std::unique_ptr<RowSink> MakeWriter(OutputFormat format, FILE* out);

}  // namespace microscope::sql
