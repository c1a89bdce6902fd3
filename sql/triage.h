// `microscope triage`'s findings: rules run over one window's capture and
// ranked by their estimated share of the window. A rule is data, not code:
// one SQL file (rules/*.sql, built into the binary, and any --rules DIR)
// whose header says its title, its least share worth reporting and the next
// command, and whose query returns its candidate findings, a row each, with
// a `share` column (0 to 1) and any evidence columns, which fill the
// title's and the next command's {column} places. Pure over the capture.
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sql/database.h"

namespace microscope::sql {

struct Rule {
  std::string name;   // the file's name without .sql
  std::string title;  // with {column} places
  double minimum = 0.05;
  std::string next;  // the command to run next, with {column} places ({capture}: the file)
  std::string sql;
  std::string origin;  // "built in" or the file's path
};

// Parses a rule file's text: its leading "-- key: value" lines (title,
// minimum, next), then the query. Errors name the rule and what is wrong.
Result<Rule> ParseRule(std::string name, std::string text, std::string origin);

// The rules built into the binary (rules/*.sql), by name.
std::vector<Rule> BuiltinRules();

// The *.sql files of `dir` (regular files only, never a link), by name: a
// user's rules, run beside or instead of the built-in ones of that name.
Result<std::vector<Rule>> RulesFromDirectory(const std::string& dir);

// The built-in rules, each replaced by a rule of the same name from `dirs`
// (in order), and the others of `dirs` added after them.
Result<std::vector<Rule>> LoadRules(std::span<const std::string> dirs);

struct Finding {
  std::string rule;
  std::string title;
  double share = 0;
  std::vector<std::pair<std::string, Value>> evidence;  // the row's other columns
  std::string next;
};

struct Uncovered {
  std::string what;
  std::string why;
};

struct TriageReport {
  std::string capture;  // the window's capture file
  uint64_t window_ns = 0;
  uint64_t thread_ns = 0;  // the target's threads' time in the window: the shares' whole
  size_t threads = 0;
  std::vector<Finding> findings;  // by share, largest first
  std::vector<Uncovered> not_covered;
  std::vector<std::string> rule_errors;  // rules that failed to run, each with why
};

// Runs every rule over the database's one capture (named `capture_path` in
// the next commands) and ranks what passes its minimum.
TriageReport Triage(Database& db, std::span<const Rule> rules, const std::string& capture_path);

// Writes the report as JSON (schema "microscope.triage/1", docs/triage.md)
// or as text for a person.
std::string TriageJson(const TriageReport& report);
std::string TriageText(const TriageReport& report);

}  // namespace microscope::sql
