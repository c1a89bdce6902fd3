#include "sql/triage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/presentation.h"
#include "base/file_policy.h"

namespace microscope::sql {

// The rule files of rules/, built in (generated: rules_generated.cc).
extern const char* const kBuiltinRuleFiles[][2];
extern const size_t kBuiltinRuleCount;

namespace {

constexpr uint64_t kMaxRuleBytes = 64 * 1024;

std::string TrimSpace(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::string EvidenceText(const Value& v) {
  if (std::holds_alternative<int64_t>(v)) return std::to_string(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.3g", std::get<double>(v));
    return buf;
  }
  if (std::holds_alternative<std::string>(v)) return std::get<std::string>(v);
  return "NULL";
}

// A word the shell takes as it is, or the word in single quotes.
std::string ShellWord(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
           c == '-' || c == '=' || c == ':' || c == ',' || c == '+';
  });
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Percent(double share) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.1f%%", 100 * share);
  return buf;
}

// `text` with each {column} replaced by the row's value (in `next`, as a
// shell word); {share_pct} and {capture} are there too.
std::string Fill(const std::string& text, const std::vector<std::string>& columns,
                 const std::vector<Value>& row, double share, const std::string& capture,
                 bool shell) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '{') {
      size_t end = text.find('}', i);
      if (end != std::string::npos) {
        const std::string name = text.substr(i + 1, end - i - 1);
        std::optional<std::string> value;
        if (name == "capture") value = capture;
        if (name == "share_pct") value = Percent(share);
        for (size_t c = 0; c < columns.size() && !value; ++c) {
          if (columns[c] == name) value = EvidenceText(row[c]);
        }
        if (value) {
          out += shell && name != "share_pct" ? ShellWord(*value) : *value;
          i = end + 1;
          continue;
        }
      }
    }
    out += text[i++];
  }
  return out;
}

double Number(const Value& v) {
  if (std::holds_alternative<int64_t>(v)) return double(std::get<int64_t>(v));
  if (std::holds_alternative<double>(v)) return std::get<double>(v);
  return NAN;
}

// One number of a one-row query (0 when absent).
double Scalar(Database& db, const std::string& query) {
  CollectedRows c;
  if (!db.Run(query, c, 30000).ok() || c.rows.empty() || c.rows[0].empty()) return 0;
  double v = Number(c.rows[0][0]);
  return std::isnan(v) ? 0 : v;
}

}  // namespace

Result<Rule> ParseRule(std::string name, std::string text, std::string origin) {
  Rule r;
  r.name = std::move(name);
  r.origin = std::move(origin);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string line = TrimSpace(std::string_view(text).substr(pos, end - pos));
    if (!line.empty() && line.rfind("--", 0) != 0) break;
    pos = end + 1;
    const size_t colon = line.find(':');
    if (line.rfind("--", 0) != 0 || colon == std::string::npos) continue;
    const std::string key = TrimSpace(line.substr(2, colon - 2)),
                      value = TrimSpace(line.substr(colon + 1));
    if (key == "title") {
      r.title = value;
    } else if (key == "next") {
      r.next = value;
    } else if (key == "minimum") {
      char* stop = nullptr;
      r.minimum = strtod(value.c_str(), &stop);
      if (stop == value.c_str() || *stop != '\0' || r.minimum < 0 || r.minimum > 1) {
        return Status::Error("rule " + r.name + ": minimum must be a share from 0 to 1, not '" +
                             value + "'");
      }
    }
  }
  r.sql = pos < text.size() ? text.substr(pos) : "";
  if (r.title.empty()) return Status::Error("rule " + r.name + ": no '-- title:' line");
  if (r.next.empty()) return Status::Error("rule " + r.name + ": no '-- next:' line");
  if (TrimSpace(r.sql).empty())
    return Status::Error("rule " + r.name + ": no query after its header");
  return r;
}

std::vector<Rule> BuiltinRules() {
  std::vector<Rule> out;
  for (size_t i = 0; i < kBuiltinRuleCount; ++i) {
    Result<Rule> r = ParseRule(kBuiltinRuleFiles[i][0], kBuiltinRuleFiles[i][1], "built in");
    if (r.ok()) out.push_back(std::move(r).value());  // a unit test holds every one to parse
  }
  return out;
}

Result<std::vector<Rule>> RulesFromDirectory(const std::string& dir) {
  ASSIGN_OR_RETURN(ScopedFd d, OpenDirectory(dir));
  std::vector<std::string> names = EntryNames(d.get());
  std::sort(names.begin(), names.end());
  std::vector<Rule> out;
  for (const std::string& file : names) {
    if (file.size() <= 4 || file.substr(file.size() - 4) != ".sql") continue;
    ASSIGN_OR_RETURN(ScopedFd fd, OpenEntry(d.get(), file));
    Result<std::vector<uint8_t>> bytes = ReadWhole(fd.get(), kMaxRuleBytes);
    if (!bytes.ok()) return bytes.status().WithContext(dir + "/" + file);
    Result<Rule> r = ParseRule(file.substr(0, file.size() - 4),
                               std::string(bytes->begin(), bytes->end()), dir + "/" + file);
    if (!r.ok()) return r.status().WithContext(dir + "/" + file);
    out.push_back(std::move(r).value());
  }
  return out;
}

Result<std::vector<Rule>> LoadRules(std::span<const std::string> dirs) {
  std::vector<Rule> rules = BuiltinRules();
  for (const std::string& dir : dirs) {
    ASSIGN_OR_RETURN(std::vector<Rule> theirs, RulesFromDirectory(dir));
    for (Rule& r : theirs) {
      auto same =
          std::find_if(rules.begin(), rules.end(), [&](const Rule& b) { return b.name == r.name; });
      if (same != rules.end()) {
        *same = std::move(r);
      } else {
        rules.push_back(std::move(r));
      }
    }
  }
  return rules;
}

TriageReport Triage(Database& db, std::span<const Rule> rules, const std::string& capture_path) {
  TriageReport report;
  report.capture = capture_path;
  report.window_ns = uint64_t(Scalar(db, "SELECT duration FROM captures"));
  const std::string threads =
      "WITH th AS (SELECT thread, max(time) - min(time) AS life FROM readings "
      "WHERE thread IS NOT NULL GROUP BY thread) ";
  report.threads = size_t(Scalar(db, threads + "SELECT count(*) FROM th"));
  report.thread_ns = uint64_t(Scalar(db, threads + "SELECT coalesce(sum(life), 0) FROM th"));
  for (const Rule& rule : rules) {
    CollectedRows c;
    Status s = db.Run(rule.sql, c, 30000);
    if (!s.ok()) {
      report.rule_errors.push_back(rule.name + " (" + rule.origin + "): " + s.message());
      continue;
    }
    auto share_at = std::find(c.columns.begin(), c.columns.end(), "share");
    if (share_at == c.columns.end()) {
      report.rule_errors.push_back(rule.name + " (" + rule.origin +
                                   "): its query has no share column");
      continue;
    }
    const size_t share_col = size_t(share_at - c.columns.begin());
    for (const auto& row : c.rows) {
      const double share = Number(row[share_col]);
      if (std::isnan(share) || share < rule.minimum) continue;
      Finding f;
      f.rule = rule.name;
      f.share = std::min(1.0, share);
      f.title = Fill(rule.title, c.columns, row, f.share, capture_path, false);
      f.next = Fill(rule.next, c.columns, row, f.share, capture_path, true);
      for (size_t i = 0; i < row.size(); ++i) {
        if (i != share_col) f.evidence.emplace_back(c.columns[i], row[i]);
      }
      report.findings.push_back(std::move(f));
    }
  }
  std::stable_sort(report.findings.begin(), report.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.share > b.share; });
  // What one window of these sources cannot say.
  auto& nc = report.not_covered;
  if (report.threads == 0) {
    nc.push_back({"on-CPU, run-queue and throttled time",
                  "the capture has no schedstat readings (record --readings): shares are of "
                  "samples and off-CPU time only"});
  }
  if (Scalar(db, "SELECT count(*) FROM readings WHERE key = 'cpu.periods'") == 0) {
    nc.push_back({"cgroup CPU throttling", "no CPU controller was found for the target's cgroup"});
  }
  for (const char* source : {"off-cpu", "syscalls"}) {
    CollectedRows st;
    db.Run(std::string("SELECT state FROM sources WHERE name = '") + source + "' LIMIT 1", st,
           30000);
    const std::string state =
        st.rows.empty() ? std::string("not asked for") : EvidenceText(st.rows[0][0]);
    if (state != "on") {
      nc.push_back(
          {std::string(source) == "off-cpu" ? "blocked time and who woke whom" : "system calls",
           std::string("the ") + source + " source was " + state});
    }
  }
  const double unread =
      Scalar(db,
             "SELECT count(*) FROM threads t WHERE EXISTS (SELECT 1 FROM samples s "
             "WHERE s.thread = t.id) AND t.id NOT IN (SELECT thread FROM "
             "thread_window WHERE life > 0)");
  if (report.threads > 0 && unread > 0) {
    nc.push_back({"threads too short to read",
                  std::to_string(int64_t(unread)) +
                      " threads with samples lived between two readings (100 ms apart), or "
                      "outside the target's descendants: they are in the samples, not the shares"});
  }
  nc.push_back({"GPU activity", "no GPU tracing: kernels, copies and their queues are not seen"});
  nc.push_back({"I/O device latency",
                "the block layer is not traced: time in uninterruptible sleep says a thread "
                "waited, not on which device or request (biolatency, biosnoop say that)"});
  nc.push_back({"lock owner",
                "a waker is the thread that released what another waited for, not necessarily "
                "the one that held it longest"});
  nc.push_back({"memory",
                "allocations and page faults are not traced; pressure (PSI) only "
                "says whether tasks stalled on memory"});
  return report;
}

std::string TriageJson(const TriageReport& r) {
  nlohmann::ordered_json j;
  j["schema"] = "microscope.triage/1";
  j["capture"] = r.capture;
  j["window"] = {{"duration_ns", r.window_ns}, {"threads", r.threads}, {"thread_ns", r.thread_ns}};
  j["findings"] = nlohmann::ordered_json::array();
  for (const Finding& f : r.findings) {
    nlohmann::ordered_json ev = nlohmann::ordered_json::object();
    for (const auto& [k, v] : f.evidence) {
      if (std::holds_alternative<int64_t>(v))
        ev[k] = std::get<int64_t>(v);
      else if (std::holds_alternative<double>(v))
        ev[k] = std::get<double>(v);
      else if (std::holds_alternative<std::string>(v))
        ev[k] = std::get<std::string>(v);
      else
        ev[k] = nullptr;
    }
    j["findings"].push_back({{"rule", f.rule},
                             {"title", f.title},
                             {"share", f.share},
                             {"evidence", ev},
                             {"next", f.next}});
  }
  j["not_covered"] = nlohmann::ordered_json::array();
  for (const Uncovered& u : r.not_covered)
    j["not_covered"].push_back({{"what", u.what}, {"why", u.why}});
  if (!r.rule_errors.empty()) j["rule_errors"] = r.rule_errors;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string TriageText(const TriageReport& r) {
  std::string out = "triage of " + r.capture + ": " + std::to_string(r.threads) + " thread" +
                    (r.threads == 1 ? "" : "s") + ", a " + analysis::Duration(r.window_ns) +
                    " window (" + analysis::Duration(r.thread_ns) + " of thread time)\n";
  if (r.findings.empty()) out += "\nno finding passed its rule's minimum share\n";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& f = r.findings[i];
    char head[64];
    snprintf(head, sizeof head, "\n%2zu. %6s  ", i + 1, Percent(f.share).c_str());
    out += head + f.title + "  [" + f.rule + "]\n";
    std::string ev;
    for (const auto& [k, v] : f.evidence)
      ev += (ev.empty() ? "" : ", ") + k + " " + EvidenceText(v);
    if (!ev.empty()) out += "             evidence: " + ev + "\n";
    out += "             next: " + f.next + "\n";
  }
  out += "\nnot covered by this window:\n";
  for (const Uncovered& u : r.not_covered) out += "  - " + u.what + ": " + u.why + "\n";
  for (const std::string& e : r.rule_errors) out += "rule failed: " + e + "\n";
  return out;
}

}  // namespace microscope::sql
