#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "capture/reader.h"
#include "capture/segments.h"
#include "sql/database.h"
#include "sql/result_writer.h"
#include "sql/shell.h"
#include "src/cli/commands.h"
#include "src/record/snapshot_server.h"

namespace microscope::cli {
namespace {

struct QueryOptions {
  std::vector<std::string> args;  // captures, then the SQL
  std::string sql;
  int pid = 0;
  std::string format;
  bool human = false;
  std::string timeout = "30s";
  std::string export_path;
  bool schema = false;
};

// A snapshot of the running recording of `pid` (the recorder's or its
// target's), read and its file removed: the recording goes on.
Result<capture::Capture> Snapshot(int pid, uint64_t timeout_ms) {
  char dir[] = "/tmp/microscope-query-XXXXXX";  // 0700, this user's
  if (mkdtemp(dir) == nullptr) return Status::Error("cannot make a temporary directory");
  // The recorder may run as root and this user may not: it writes the file
  // as the asker may read it (snapshot_server), into a directory only we
  // (and root) can enter.
  const std::string path = std::string(dir) + "/snapshot.mscap";
  Result<std::string> written =
      record::RequestSnapshot(pid, path, int(std::min<uint64_t>(timeout_ms, 600000)));
  Result<capture::Capture> read =
      written.ok() ? capture::ReadCapture(path) : Result<capture::Capture>(written.status());
  unlink(path.c_str());
  rmdir(dir);
  if (!read.ok()) return read.status().WithContext("pid " + std::to_string(pid));
  return read;
}

int RunQuery(QueryOptions& o) {
  if (o.schema) {
    std::unique_ptr<sql::RowSink> sink =
        sql::MakeWriter(sql::ChooseFormat(o.format, o.human, isatty(STDOUT_FILENO) != 0), stdout);
    sql::WriteSchemaRows(*sink);
    return 0;
  }
  uint64_t timeout_ns = 0;
  if (!ParseDurationOption("--timeout", o.timeout, &timeout_ns)) return 2;
  const uint64_t timeout_ms = std::max<uint64_t>(1, timeout_ns / 1000000);
  // The last argument is the SQL unless it names a file or directory (or
  // --sql gave it).
  std::vector<std::string> inputs = o.args;
  std::string text = o.sql;
  if (text.empty() && !inputs.empty() && (inputs.size() > 1 || o.pid != 0)) {
    struct stat st;
    if (stat(inputs.back().c_str(), &st) != 0) {
      text = inputs.back();
      inputs.pop_back();
    }
  }
  if (inputs.empty() && o.pid == 0) {
    PrintError("query: name a capture, a --continuous directory, or --pid PID");
    return 2;
  }
  sql::Corpus corpus;
  if (o.pid != 0) {
    Result<capture::Capture> snap = Snapshot(o.pid, timeout_ms);
    if (!snap.ok()) {
      PrintError(snap.status().message());
      return 1;
    }
    corpus.Add("pid " + std::to_string(o.pid), std::move(snap).value());
  }
  for (const std::string& path : inputs) {
    Result<capture::Capture> read = capture::ReadCaptureOrSegments(path);
    if (!read.ok()) {
      PrintError(read.status().message());
      return 1;
    }
    corpus.Add(path, std::move(read).value());
  }
  Result<std::unique_ptr<sql::Database>> db = sql::Database::Open(std::move(corpus));
  if (!db.ok()) {
    PrintError(db.status().message());
    return 1;
  }
  if (!o.export_path.empty()) {
    if (!text.empty()) {
      PrintError("query --export writes the tables; it takes no SQL");
      return 2;
    }
    Status s = (*db)->Export(o.export_path);
    if (!s.ok()) {
      PrintError(s.message());
      return 1;
    }
    fprintf(stderr, "microscope: wrote %s\n", o.export_path.c_str());
    return 0;
  }
  const sql::OutputFormat format = sql::ChooseFormat(o.format, o.human, isatty(STDOUT_FILENO) != 0);
  if (text.empty()) {
    sql::ShellOptions shell{format, timeout_ms, isatty(STDIN_FILENO) != 0};
    return sql::RunShell(**db, stdin, stdout, stderr, shell) == 0 ? 0 : 1;
  }
  std::unique_ptr<sql::RowSink> sink = sql::MakeWriter(format, stdout);
  Status s = (*db)->Run(text, *sink, timeout_ms);
  fflush(stdout);
  if (!s.ok()) {
    PrintError(s.message());
    return 1;
  }
  return 0;
}

}  // namespace

Runner AddQueryCommand(CLI::App& app) {
  auto o = std::make_shared<QueryOptions>();
  CLI::App* cmd = app.add_subcommand(
      "query",
      "SQL over captures: samples, stacks, frames, threads, off-CPU time, system calls, zones\n"
      "and more as SQLite tables.\n"
      "  microscope query run.mscap \"SELECT name, self FROM function_costs LIMIT 10\"\n"
      "  microscope query a.mscap b.mscap DIR \"SQL\"   several captures: a `capture` column\n"
      "  microscope query run.mscap                   an interactive shell (.tables, .schema)\n"
      "  microscope query --pid PID \"SQL\"             a running recording, without stopping it\n"
      "  microscope query --export run.db run.mscap   a SQLite file for sqlite3 and other tools\n"
      "Ids (thread, stack, frame, ...) are unique across the captures of a query. Tables,\n"
      "columns and units: `microscope query --schema`, and docs/query.md. Queries are\n"
      "read-only and bounded in time. Output: an aligned table on a terminal, JSON when\n"
      "stdout is a pipe or file (--format, --human).");
  cmd->add_option("args", o->args,
                  "capture files or --continuous directories, then the SQL (one or more "
                  "statements; the last argument is the SQL unless it is a file or directory)");
  cmd->add_option("--sql", o->sql, "the SQL, when it is not given as the last argument");
  cmd->add_option("--pid", o->pid,
                  "query what the running recording of PID holds now (the recorder's pid or its "
                  "target's; as `microscope snapshot`), beside any captures named")
      ->check(PidCheck());
  cmd->add_option("--format", o->format,
                  "table, csv, json (an array of objects per statement) or ndjson (an object per "
                  "line); default: table on a terminal, json otherwise")
      ->check(CLI::IsMember({"table", "csv", "json", "ndjson"}));
  cmd->add_flag("--human", o->human, "the aligned table even when stdout is not a terminal");
  cmd->add_option("--timeout", o->timeout,
                  "stop a query still running after TIME (a statement's, or the shell's each)")
      ->capture_default_str();
  cmd->add_option("--export", o->export_path,
                  "write every table to a SQLite database FILE (sqlite3 FILE opens it; "
                  "sample_frames is a view there, in plain SQL)")
      ->type_name("FILE");
  cmd->add_flag("--schema", o->schema,
                "every table's and view's columns with their types, units and meaning (as "
                "rows, in the output format); the shell's .schema gives them as SQL");
  return [o] { return RunQuery(*o); };
}

}  // namespace microscope::cli
