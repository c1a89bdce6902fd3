#include <doctest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/report.h"
#include "sql/database.h"
#include "sql/result_writer.h"
#include "sql/shell.h"
#include "sql/tables.h"
#include "sql/triage.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using sql::Value;

namespace {

using Collect = sql::CollectedRows;

std::unique_ptr<sql::Database> Open(std::vector<capture::Capture> captures) {
  sql::Corpus corpus;
  for (size_t i = 0; i < captures.size(); ++i) {
    corpus.Add("c" + std::to_string(i), std::move(captures[i]));
  }
  auto db = sql::Database::Open(std::move(corpus));
  REQUIRE(db.ok());
  return std::move(db).value();
}

Collect Run(sql::Database& db, const std::string& query, uint64_t timeout_ms = 30000) {
  Collect c;
  Status s = db.Run(query, c, timeout_ms);
  INFO(query);
  INFO(s.message());
  REQUIRE(s.ok());
  return c;
}

int64_t Int(const Value& v) {
  REQUIRE(std::holds_alternative<int64_t>(v));
  return std::get<int64_t>(v);
}
std::string Text(const Value& v) {
  REQUIRE(std::holds_alternative<std::string>(v));
  return std::get<std::string>(v);
}

std::string Write(sql::OutputFormat format, const std::vector<std::string>& columns,
                  const std::vector<std::vector<Value>>& rows) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  {
    auto w = sql::MakeWriter(format, f);
    w->Begin(columns);
    for (const auto& r : rows) w->Row(r);
    w->End();
  }
  fclose(f);
  std::string out(buf, len);
  free(buf);
  return out;
}

}  // namespace

TEST_CASE("Query: function_costs is the report's flat table") {
  capture::Capture c = testing::MakeProbeCapture();
  analysis::ReportQuery q;
  q.views.flat = true;
  auto model = analysis::BuildReport(c, q);
  REQUIRE(model.ok());
  auto db = Open({c});
  Collect got = Run(*db,
                    "SELECT name, module, self_samples, self, total_samples, total, self_percent "
                    "FROM function_costs");
  REQUIRE(got.rows.size() == model->flat.rows.size());
  for (size_t i = 0; i < got.rows.size(); ++i) {
    const analysis::ReportFunction& f = model->flat.rows[i];
    CHECK(Text(got.rows[i][0]) == f.name);
    CHECK(Text(got.rows[i][1]) == f.module);
    CHECK(Int(got.rows[i][2]) == int64_t(f.self.samples));
    CHECK(Int(got.rows[i][3]) == int64_t(f.self.value));
    CHECK(Int(got.rows[i][4]) == int64_t(f.total.samples));
    CHECK(Int(got.rows[i][5]) == int64_t(f.total.value));
    CHECK(std::get<double>(got.rows[i][6]) == f.self.percent);
  }
}

TEST_CASE("Query: self and total written in SQL over the base tables match function_costs") {
  auto db = Open({testing::MakeProbeCapture()});
  // Per sample and depth (sample_frames), keyed as report keys a frame: by
  // its function, else by the frame; total once per sample.
  const std::string by_frames =
      "WITH k AS (SELECT sample, depth, weight, count, name, "
      "  coalesce('f' || function, 'x' || frame) AS key FROM sample_frames), "
      "per AS (SELECT key, name, sample, min(depth) AS d, weight, count FROM k GROUP BY key, "
      "sample) "
      "SELECT name, sum(CASE WHEN d = 0 THEN count ELSE 0 END), "
      "  sum(CASE WHEN d = 0 THEN weight ELSE 0 END), sum(count), sum(weight) FROM per "
      "GROUP BY key ORDER BY name";
  const std::string costs =
      "SELECT name, self_samples, self, total_samples, total FROM function_costs ORDER BY name";
  Collect a = Run(*db, by_frames);
  Collect b = Run(*db, costs);
  CHECK(a.rows == b.rows);
  CHECK(!a.rows.empty());
}

TEST_CASE("Query: sample_frames walks each stack leaf first, as leaf() and frame_at() name it") {
  auto db = Open({testing::MakeTestCapture()});
  Collect n = Run(*db,
                  "SELECT count(*) FROM sample_frames f JOIN samples s ON s.id = f.sample "
                  "WHERE f.name IS NOT frame_at(s.stack, f.depth)");
  CHECK(Int(n.rows[0][0]) == 0);
  Collect leaf = Run(*db,
                     "SELECT count(*) FROM sample_frames f JOIN samples s ON s.id = f.sample "
                     "WHERE f.depth = 0 AND f.name = leaf(s.stack)");
  Collect samples = Run(*db, "SELECT count(*) FROM samples WHERE stack IS NOT NULL");
  CHECK(Int(leaf.rows[0][0]) == Int(samples.rows[0][0]));
  // main -> run -> hot: three frames, depth 2 is the root.
  Collect hot = Run(*db,
                    "SELECT frame_at(stack, 0), frame_at(stack, 1), frame_at(stack, 2), "
                    "frame_at(stack, 3) FROM samples WHERE leaf(stack) = 'hot' LIMIT 1");
  CHECK(Text(hot.rows[0][0]) == "hot");
  CHECK(Text(hot.rows[0][1]) == "run");
  CHECK(Text(hot.rows[0][2]) == "main");
  CHECK(std::holds_alternative<std::monostate>(hot.rows[0][3]));
  Collect contains = Run(*db,
                         "SELECT sum(stack_contains(stack, '^ru')), sum(stack_contains(stack, "
                         "'^co')), sum(stack_contains(stack, 'nothing')) FROM samples");
  CHECK(Int(contains.rows[0][0]) == 10);
  CHECK(Int(contains.rows[0][1]) == 3);
  CHECK(Int(contains.rows[0][2]) == 0);
  Collect bad;
  Status s = db->Run("SELECT stack_contains(stack, '(') FROM samples", bad, 30000);
  CHECK(!s.ok());
  CHECK(s.message().find("stack_contains: bad regular expression") != std::string::npos);
}

TEST_CASE("Query: ids run on across captures, so joins need no capture term") {
  auto db = Open({testing::MakeOffCpuCapture(), testing::MakeOffCpuCapture()});
  Collect per =
      Run(*db, "SELECT capture, count(*), min(id), max(id) FROM samples GROUP BY capture");
  REQUIRE(per.rows.size() == 2);
  const int64_t n = Int(per.rows[0][1]);
  CHECK(Int(per.rows[1][2]) == n);
  CHECK(Int(per.rows[1][3]) == 2 * n - 1);
  Collect mixed = Run(*db,
                      "SELECT count(*) FROM samples s JOIN threads t ON t.id = s.thread "
                      "JOIN stacks st ON st.id = s.stack JOIN frames f ON f.id = st.frame "
                      "WHERE s.capture != t.capture OR t.capture != f.capture");
  CHECK(Int(mixed.rows[0][0]) == 0);
  Collect joined = Run(*db, "SELECT count(*) FROM samples s JOIN threads t ON t.id = s.thread");
  CHECK(Int(joined.rows[0][0]) == 2 * n);
  Collect one = Run(*db, "SELECT count(*) FROM samples WHERE capture = 1");
  CHECK(Int(one.rows[0][0]) == n);
  Collect missing = Run(*db, "SELECT count(*) FROM threads WHERE id = 1000000 OR id = -1");
  CHECK(Int(missing.rows[0][0]) == 0);
  Collect states = Run(*db,
                       "SELECT state, sum(duration) FROM off_cpu WHERE capture = 0 GROUP BY "
                       "state ORDER BY state");
  REQUIRE(states.rows.size() == 3);
  CHECK(Text(states.rows[0][0]) == "preempted");
  CHECK(Int(states.rows[0][1]) == 300);
  CHECK(Text(states.rows[1][0]) == "sleeping");
  CHECK(Int(states.rows[1][1]) == 460);
  CHECK(Int(states.rows[2][1]) == 300);
}

TEST_CASE("Query: zones, marks, counters, labels and zone_samples come from the probes") {
  capture::Capture c = testing::MakeProbeCapture();
  analysis::ReportQuery q;
  q.views.zones = true;
  auto model = analysis::BuildReport(c, q);
  REQUIRE(model.ok());
  REQUIRE(model->zones);
  auto db = Open({c});
  Collect zones = Run(*db,
                      "SELECT name, count(*), sum(duration), sum(self) FROM zones "
                      "WHERE duration IS NOT NULL GROUP BY name ORDER BY name");
  std::map<std::string, std::tuple<int64_t, int64_t, int64_t>> want;
  std::map<std::string, int64_t> samples;
  for (const auto& z : model->zones->rows) {
    if (z.count > 0) want[z.name] = {int64_t(z.count), int64_t(z.total_ns), int64_t(z.self_ns)};
    if (z.samples > 0) samples[z.name] = int64_t(z.samples);
  }
  REQUIRE(zones.rows.size() == want.size());
  for (const auto& r : zones.rows) {
    INFO(Text(r[0]));
    CHECK(want[Text(r[0])] == std::tuple(Int(r[1]), Int(r[2]), Int(r[3])));
  }
  Collect inside = Run(*db, "SELECT sum(count) FROM zone_samples");
  CHECK(Int(inside.rows[0][0]) == int64_t(model->zones->samples_inside));
  Collect per_zone = Run(*db, "SELECT zone_name, sum(count) FROM zone_samples GROUP BY 1");
  REQUIRE(per_zone.rows.size() == samples.size());
  for (const auto& r : per_zone.rows) CHECK(samples[Text(r[0])] == Int(r[1]));
  Collect marks = Run(*db, "SELECT name, time FROM marks");
  REQUIRE(marks.rows.size() == 1);
  CHECK(Text(marks.rows[0][0]) == "tick");
  CHECK(Int(marks.rows[0][1]) == 105);
  Collect counters = Run(*db, "SELECT name, value FROM counters");
  REQUIRE(counters.rows.size() == 1);
  CHECK(std::get<double>(counters.rows[0][1]) == 3.5);
  Collect labels = Run(*db, "SELECT key, value, start, end FROM labels WHERE source = 'probe'");
  REQUIRE(labels.rows.size() == 1);
  CHECK(Text(labels.rows[0][1]) == "/a");
  CHECK(Int(labels.rows[0][2]) == 60);
  CHECK(Int(labels.rows[0][3]) == 230);
  Collect open = Run(*db, "SELECT count(*) FROM zones WHERE end IS NULL OR begin IS NULL");
  CHECK(Int(open.rows[0][0]) == 2);
}

TEST_CASE("Query: read-only, bad SQL and a runaway query are refused with clear errors") {
  auto db = Open({testing::MakeTestCapture()});
  Collect sink;
  for (const char* q : {"ATTACH '/tmp/x.db' AS x", "CREATE TEMP TABLE t(x)",
                        "PRAGMA writable_schema = 1", "BEGIN", "CREATE TEMP VIEW v AS SELECT 1"}) {
    INFO(q);
    Status s = db->Run(q, sink, 30000);
    CHECK(!s.ok());
    CHECK(s.message().find("read-only") != std::string::npos);
  }
  Status del = db->Run("DELETE FROM samples", sink, 30000);
  CHECK(!del.ok());
  // VACUUM asks no authorizer; it writes, and is refused as a writer.
  char vacuum_dir[] = "/tmp/query-vacuum-XXXXXX";
  REQUIRE(mkdtemp(vacuum_dir) != nullptr);
  const std::string vacuum_file = std::string(vacuum_dir) + "/v.db";
  Status vacuum = db->Run("VACUUM INTO '" + vacuum_file + "'", sink, 30000);
  CHECK(!vacuum.ok());
  CHECK(access(vacuum_file.c_str(), F_OK) != 0);
  rmdir(vacuum_dir);
  // Memory is bounded: a 1 TB blob is an error.
  Status big = db->Run("SELECT length(zeroblob(1000000000000))", sink, 30000);
  CHECK(!big.ok());
  // An id compared with a real of an integer's value finds its row.
  Collect real_id = Run(*db, "SELECT count(*) FROM samples WHERE id = 1.0");
  CHECK(Int(real_id.rows[0][0]) == 1);
  Status bad = db->Run("SELECT 1;\nSELECT * FORM samples", sink, 30000);
  REQUIRE(!bad.ok());
  CHECK(bad.message().find("near \"FORM\": syntax error (at byte 19)") == 0);
  CHECK(bad.message().find("\n  SELECT * FORM samples\n           ^") != std::string::npos);
  Status runaway = db->Run(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
      sink, 100);
  REQUIRE(!runaway.ok());
  CHECK(runaway.code() == StatusCode::kCancelled);
  CHECK(runaway.message().find("time bound") != std::string::npos);
  // The next query runs again.
  Collect after = Run(*db, "SELECT count(*) FROM samples");
  CHECK(Int(after.rows[0][0]) == 10);
  // The pragmas that read are allowed (the shell's schema questions).
  Collect info = Run(*db, "SELECT name FROM pragma_table_info('samples')");
  CHECK(info.rows.size() == sql::FindTable("samples")->columns.size());
  Collect info2 = Run(*db, "PRAGMA table_info(off_cpu)");
  CHECK(info2.rows.size() == sql::FindTable("off_cpu")->columns.size());
}

TEST_CASE("Query: the exported file holds every table, and sample_frames as plain SQL") {
  auto db = Open({testing::MakeProbeCapture()});
  char dir[] = "/tmp/query-test-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/out.db";
  REQUIRE(db->Export(path).ok());
  sqlite3* file = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &file, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  auto one = [&](sqlite3* conn, const std::string& q) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(conn, q.c_str(), -1, &st, nullptr) == SQLITE_OK);
    std::vector<std::string> rows;
    while (sqlite3_step(st) == SQLITE_ROW) {
      std::string row;
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        const unsigned char* t = sqlite3_column_text(st, i);
        row += std::string(t ? reinterpret_cast<const char*>(t) : "NULL") + "|";
      }
      rows.push_back(row);
    }
    sqlite3_finalize(st);
    return rows;
  };
  for (const sql::TableSpec& t : sql::Tables()) {
    INFO(t.name);
    const std::string q = std::string("SELECT * FROM ") + t.name;
    Collect mine = Run(*db, q);
    std::vector<std::string> theirs = one(file, q);
    CHECK(theirs.size() == mine.rows.size());
  }
  // The view in plain SQL gives what the virtual table gives.
  const std::string frames = "SELECT * FROM sample_frames ORDER BY sample, depth";
  Collect mine = Run(*db, frames);
  std::vector<std::string> as_text;
  for (const auto& r : mine.rows) {
    std::string row;
    for (const Value& v : r) {
      row += (std::holds_alternative<int64_t>(v)       ? std::to_string(std::get<int64_t>(v))
              : std::holds_alternative<std::string>(v) ? std::get<std::string>(v)
                                                       : std::string("NULL")) +
             "|";
    }
    as_text.push_back(row);
  }
  CHECK(as_text == one(file, frames));
  CHECK(as_text.size() > 10);
  CHECK(one(file, "SELECT count(*) FROM microscope_columns WHERE \"table\" = 'samples'")[0] ==
        std::to_string(sql::FindTable("samples")->columns.size()) + "|");
  sqlite3_close(file);
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("Query: results as a table, CSV, JSON and NDJSON") {
  const std::vector<std::string> cols = {"name", "n", "x"};
  const std::vector<std::vector<Value>> rows = {
      {std::string("a,\"b\""), int64_t(3), 0.5},
      {std::string("line\nbreak"), std::monostate{}, 1e300}};
  CHECK(Write(sql::OutputFormat::kCsv, cols, rows) ==
        "name,n,x\r\n\"a,\"\"b\"\"\",3,0.5\r\n\"line\nbreak\",,1e+300\r\n");
  CHECK(Write(sql::OutputFormat::kNdjson, cols, rows) ==
        "{\"name\":\"a,\\\"b\\\"\",\"n\":3,\"x\":0.5}\n"
        "{\"name\":\"line\\nbreak\",\"n\":null,\"x\":1e+300}\n");
  CHECK(Write(sql::OutputFormat::kJson, cols, {}) == "[]\n");
  CHECK(Write(sql::OutputFormat::kTable, cols, rows) ==
        "name        n     x\n"
        "----------  ----  ------\n"
        "a,\"b\"          3     0.5\n"
        "line break  NULL  1e+300\n"
        "(2 rows)\n");
  CHECK(sql::ChooseFormat("", false, true) == sql::OutputFormat::kTable);
  CHECK(sql::ChooseFormat("", false, false) == sql::OutputFormat::kJson);
  CHECK(sql::ChooseFormat("", true, false) == sql::OutputFormat::kTable);
  CHECK(sql::ChooseFormat("csv", true, true) == sql::OutputFormat::kCsv);
}

TEST_CASE("Query: the shell runs statements across lines and its dot-commands") {
  auto db = Open({testing::MakeTestCapture()});
  const char* input =
      ".tables\n.schema threads\nSELECT count(*)\n  FROM samples;\n.mode csv\n"
      "SELECT 1 AS one;\n.nothing\nSELECT 2";
  FILE* in = fmemopen(const_cast<char*>(input), strlen(input), "r");
  char *out_buf = nullptr, *err_buf = nullptr;
  size_t out_len = 0, err_len = 0;
  FILE* out = open_memstream(&out_buf, &out_len);
  FILE* err = open_memstream(&err_buf, &err_len);
  size_t failed = sql::RunShell(*db, in, out, err, {sql::OutputFormat::kTable, 30000, false});
  fclose(in);
  fclose(out);
  fclose(err);
  std::string o(out_buf, out_len), e(err_buf, err_len);
  free(out_buf);
  free(err_buf);
  CHECK(failed == 2);
  CHECK(o.find("samples\n") != std::string::npos);
  CHECK(o.find("CREATE TABLE threads(") != std::string::npos);
  CHECK(o.find("      10\n(1 row)\n") != std::string::npos);
  CHECK(o.find("one\r\n1\r\n") != std::string::npos);
  CHECK(e.find("unknown command .nothing") != std::string::npos);
  CHECK(e.find("ended inside a statement") != std::string::npos);
}

TEST_CASE("Triage: every built-in rule parses, runs over a capture and has its header") {
  std::vector<sql::Rule> rules = sql::BuiltinRules();
  CHECK(rules.size() >= 10);
  auto db = Open({testing::MakeOffCpuCapture()});
  sql::TriageReport report = sql::Triage(*db, rules, "x.mscap");
  CHECK(report.rule_errors.empty());
  for (const sql::Rule& r : rules) {
    INFO(r.name);
    CHECK(!r.title.empty());
    CHECK(r.next.rfind("microscope ", 0) == 0);
  }
  // Without readings the window's thread time is not known, and it says so.
  CHECK(report.threads == 0);
  bool said = false;
  for (const auto& u : report.not_covered)
    said = said || u.why.find("--readings") != std::string::npos;
  CHECK(said);
}

TEST_CASE("Triage: a rule's header and the errors of a bad one") {
  auto r = sql::ParseRule("x",
                          "-- title: {n} things\n-- minimum: 0.2\n-- next: microscope report "
                          "{capture} --focus {f}\nSELECT 0.5 AS share, 3 AS n, 'a b' AS f\n",
                          "test");
  REQUIRE(r.ok());
  CHECK(r->minimum == 0.2);
  auto db = Open({testing::MakeTestCapture()});
  std::vector<sql::Rule> rules = {*r};
  sql::TriageReport report = sql::Triage(*db, rules, "my file.mscap");
  REQUIRE(report.findings.size() == 1);
  CHECK(report.findings[0].title == "3 things");
  CHECK(report.findings[0].next == "microscope report 'my file.mscap' --focus 'a b'");
  CHECK(!sql::ParseRule("x", "-- next: microscope report\nSELECT 1 AS share", "t").ok());
  CHECK(!sql::ParseRule("x", "-- title: t\nSELECT 1 AS share", "t").ok());
  CHECK(!sql::ParseRule("x", "-- title: t\n-- next: n\n-- minimum: 2\nSELECT 1", "t").ok());
  auto noshare = sql::ParseRule("y", "-- title: t\n-- next: microscope x\nSELECT 1 AS n", "t");
  REQUIRE(noshare.ok());
  std::vector<sql::Rule> bad = {*noshare};
  CHECK(sql::Triage(*db, bad, "c").rule_errors.size() == 1);
}
