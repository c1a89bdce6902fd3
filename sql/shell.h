// The interactive side of `microscope query CAPTURE` with no SQL: SQLite's
// shell conventions (statements end with ';', dot-commands: .tables,
// .schema [TABLE], .mode FORMAT, .timeout TIME, .help, .quit), reading
// from a terminal or a pipe.
#pragma once

#include <cstdio>
#include <string>

#include "sql/database.h"
#include "sql/result_writer.h"

namespace microscope::sql {

struct ShellOptions {
  OutputFormat format = OutputFormat::kTable;
  uint64_t timeout_ms = 30000;
  bool prompt = true;  // the input is a terminal
};

// Reads statements and dot-commands from `in` until its end or .quit;
// errors are written to `err` and the shell goes on. Returns how many
// statements failed.
size_t RunShell(Database& db, FILE* in, FILE* out, FILE* err, ShellOptions options);

// `CREATE TABLE name(...)` of a table with each column's unit and meaning
// as comments; every table's when `name` is empty. Empty for an unknown
// name.
std::string DescribeSchema(std::string_view name = {});

// Every table's and view's columns as rows (table, kind, column, type,
// unit, meaning, the table's meaning): `query --schema` in any output
// format.
void WriteSchemaRows(RowSink& sink);

// Whether `sql` ends with a complete statement (SQLite's rule: a ';'
// outside quotes, comments and triggers).
bool IsCompleteStatement(const std::string& sql);

}  // namespace microscope::sql
