// SQL over captures (`microscope query`): the tables of tables.h as SQLite
// virtual tables over the captures in memory (nothing copied; a join on an
// id finds its row directly), the functions stack_contains, leaf, frame_at
// and duration_text, and the guards of a query: read-only (an authorizer
// allows reading and nothing else: no ATTACH, no PRAGMA that writes, no
// temporary tables) and bounded in time.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/status.h"
#include "sql/corpus.h"

struct sqlite3;

namespace microscope::sql {
struct Registry;
}

namespace microscope::sql {

// One cell of a result: NULL, an integer, a real or a text.
using Value = std::variant<std::monostate, int64_t, double, std::string>;

// Where a statement's rows go.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void Begin(const std::vector<std::string>& columns) = 0;
  virtual void Row(const std::vector<Value>& values) = 0;
  virtual void End() = 0;
};

// A sink that keeps the last statement's rows in memory (triage's rules,
// tests).
struct CollectedRows : RowSink {
  std::vector<std::string> columns;
  std::vector<std::vector<Value>> rows;
  void Begin(const std::vector<std::string>& c) override {
    columns = c;
    rows.clear();
  }
  void Row(const std::vector<Value>& v) override { rows.push_back(v); }
  void End() override {}
};

class Database {
 public:
  // Takes the captures; tables and functions are registered over them.
  static Result<std::unique_ptr<Database>> Open(Corpus corpus);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs each statement of `sql` in turn, giving the rows of each that
  // returns rows to `sink`. Errors: SQLite's message with the position
  // ("near \"FORM\": syntax error at byte 9"), a statement that would
  // write, or one still running `timeout_ms` after the first began.
  Status Run(std::string_view sql, RowSink& sink, uint64_t timeout_ms);

  // Writes every table (and views: function_costs and zone_samples as
  // tables, sample_frames as a view in SQL) to a new SQLite database file
  // at `path`: written under a temporary name beside it and renamed, so
  // `path` is whole or absent. Refuses to replace an existing file.
  Status Export(const std::string& path);

  const Corpus& corpus() const { return corpus_; }

 private:
  explicit Database(Corpus corpus) : corpus_(std::move(corpus)) {}
  Status Register();

  Corpus corpus_;
  sqlite3* db_ = nullptr;
  struct Registry* registry_ = nullptr;  // the tables' and functions' shared state
  std::atomic<bool> cancel_{false};      // set when a query's time is up
};

}  // namespace microscope::sql
