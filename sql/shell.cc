#include "sql/shell.h"

#include <sqlite3.h>

#include "base/duration.h"
#include "sql/tables.h"

namespace microscope::sql {

namespace {

constexpr const char* kHelp =
    ".tables            the tables and views\n"
    ".schema [TABLE]    their columns, units and meaning\n"
    ".mode FORMAT       table, csv, json or ndjson\n"
    ".timeout TIME      a statement's time bound (30s, 500ms, ...)\n"
    ".help              this\n"
    ".quit              leave (also .exit, or end of input)\n";

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b);
}

}  // namespace

bool IsCompleteStatement(const std::string& sql) {
  return sqlite3_complete(sql.c_str()) != 0;
}

std::string DescribeSchema(std::string_view name) {
  std::string out;
  for (const TableSpec& t : Tables()) {
    if (!name.empty() && name != t.name) continue;
    out +=
        std::string("CREATE ") + (t.view ? "VIEW " : "TABLE ") + t.name + "(  -- " + t.doc + "\n";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      const ColumnSpec& c = t.columns[i];
      std::string unit = *c.unit != '\0' ? std::string(" [") + c.unit + "]" : "";
      out += std::string("  ") + c.name + " " + c.type + (i + 1 < t.columns.size() ? "," : "") +
             "  --" + unit + " " + c.doc + "\n";
    }
    out += ");\n";
  }
  return out;
}

void WriteSchemaRows(RowSink& sink) {
  sink.Begin({"table", "kind", "column", "type", "unit", "meaning", "table_meaning"});
  for (const TableSpec& t : Tables()) {
    for (const ColumnSpec& c : t.columns) {
      sink.Row({std::string(t.name), std::string(t.view ? "view" : "table"), std::string(c.name),
                std::string(c.type), std::string(c.unit), std::string(c.doc), std::string(t.doc)});
    }
  }
  sink.End();
}

size_t RunShell(Database& db, FILE* in, FILE* out, FILE* err, ShellOptions options) {
  size_t failed = 0;
  std::string statement;
  char* line = nullptr;
  size_t capacity = 0;
  for (;;) {
    if (options.prompt) {
      fputs(statement.empty() ? "microscope> " : "       ...> ", out);
      fflush(out);
    }
    ssize_t n = getline(&line, &capacity, in);
    if (n < 0) break;
    std::string text(line, size_t(n));
    if (statement.empty() && Trim(text).rfind('.', 0) == 0) {
      std::string cmd = Trim(text);
      std::string arg;
      size_t space = cmd.find(' ');
      if (space != std::string::npos) {
        arg = Trim(cmd.substr(space + 1));
        cmd = cmd.substr(0, space);
      }
      if (cmd == ".quit" || cmd == ".exit") break;
      if (cmd == ".help") {
        fputs(kHelp, out);
      } else if (cmd == ".tables") {
        for (const TableSpec& t : Tables()) fprintf(out, "%s\n", t.name);
      } else if (cmd == ".schema") {
        std::string s = DescribeSchema(arg);
        if (s.empty()) {
          fprintf(err, "microscope: error: no table named %s (.tables lists them)\n", arg.c_str());
          ++failed;
        }
        fputs(s.c_str(), out);
      } else if (cmd == ".mode") {
        if (!ParseOutputFormat(arg, &options.format)) {
          fprintf(err, "microscope: error: .mode takes table, csv, json or ndjson, not '%s'\n",
                  arg.c_str());
          ++failed;
        }
      } else if (cmd == ".timeout") {
        Result<uint64_t> ns = ParseDuration(arg);
        if (!ns.ok() || *ns < 1000000) {
          fprintf(err, "microscope: error: .timeout takes a time of 1ms or more (30s, 500ms)\n");
          ++failed;
        } else {
          options.timeout_ms = *ns / 1000000;
        }
      } else {
        fprintf(err, "microscope: error: unknown command %s (.help lists them)\n", cmd.c_str());
        ++failed;
      }
      continue;
    }
    statement += text;
    if (!IsCompleteStatement(statement)) continue;
    std::unique_ptr<RowSink> sink = MakeWriter(options.format, out);
    Status s = db.Run(statement, *sink, options.timeout_ms);
    if (!s.ok()) {
      fprintf(err, "microscope: error: %s\n", s.message().c_str());
      ++failed;
    }
    fflush(out);
    statement.clear();
  }
  free(line);
  if (!Trim(statement).empty()) {
    fprintf(err, "microscope: error: the input ended inside a statement (no ';')\n");
    ++failed;
  }
  return failed;
}

}  // namespace microscope::sql
