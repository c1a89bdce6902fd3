// The tables and views of `microscope query`, each declared once: its
// columns (name, SQL type, unit, meaning) and how a row's cell is read from
// a capture. The virtual tables (database.cc), the exported database, the
// shell's `.schema` and docs/query.md all come from these declarations.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "sql/corpus.h"

namespace microscope::sql {

// Sets one cell of a result row.
class Out {
 public:
  explicit Out(sqlite3_context* ctx) : ctx_(ctx) {}
  void Int(int64_t v) { sqlite3_result_int64(ctx_, v); }
  void Real(double v) { sqlite3_result_double(ctx_, v); }
  void Text(std::string_view v) {
    sqlite3_result_text64(ctx_, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  }
  void Null() { sqlite3_result_null(ctx_); }
  // A capture's row `local` of `kind` as its query-wide id; kNone: NULL.
  void Id(const Part& p, IdKind kind, uint32_t local) {
    if (local == capture::kNone) return Null();
    Int(int64_t(p.base[size_t(kind)] + local));
  }
  // Unsigned values past INT64_MAX (addresses) as hex text.
  void Hex(uint64_t v);

 private:
  sqlite3_context* ctx_;
};

struct ColumnSpec {
  const char* name;
  const char* type;  // INTEGER, REAL or TEXT
  const char* unit;  // "ns", "bytes", ... or ""
  const char* doc;
  void (*get)(const Part& part, uint32_t row, Out& out);
};

// A table over one kind of row in each capture: `rows` of a capture,
// `get` per column. The first column is `capture`; a table whose rows have
// ids has `id` second (id_kind set).
struct TableSpec {
  const char* name;
  const char* doc;
  std::span<const ColumnSpec> columns;
  // Rows of a capture; null for sample_frames, whose rows its own cursor
  // makes by walking each sample's stack (database.cc).
  size_t (*rows)(const Part& part);
  bool has_id = false;
  IdKind id_kind = IdKind::kModule;
  // A view (rows derived from other tables): made before its rows are read
  // (function_costs runs the report), which may be cancelled.
  bool view = false;
  Status (*prepare)(const Part& part, analysis::Cancel cancel) = nullptr;
  // The view in SQL over the exported tables, for a database file that
  // sqlite3 opens without microscope; null: exported as a table.
  const char* export_sql = nullptr;
};

// Every table and view, in the order `.tables` lists them.
std::span<const TableSpec> Tables();
const TableSpec* FindTable(std::string_view name);

// "CREATE TABLE name(col TYPE, ...)" for a table's columns; with
// `primary_key`, its id is the INTEGER PRIMARY KEY (the exported file).
std::string CreateStatement(const TableSpec& table, bool primary_key);

}  // namespace microscope::sql
