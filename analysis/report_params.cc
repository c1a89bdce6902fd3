#include "analysis/report_params.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace microscope::analysis {
namespace {

Status Bad(const std::string& name, const std::string& value, const std::string& wanted) {
  return Status::Error(StatusCode::kInvalidArgument,
                       "parameter " + name + "='" + value + "': " + wanted);
}

template <typename T>
bool Whole(const std::string& text, T* out) {
  const char* end = text.data() + text.size();
  auto [at, error] = std::from_chars(text.data(), end, *out);
  return error == std::errc() && at == end && !text.empty();
}

// Sets the view `word` names; false for another word.
bool SetView(const std::string& word, ReportViews* v) {
  static const std::map<std::string, bool ReportViews::*> kViews = {
      {"flat", &ReportViews::flat},         {"tree", &ReportViews::tree},
      {"inverted", &ReportViews::inverted}, {"threads", &ReportViews::threads},
      {"lanes", &ReportViews::lanes},       {"syscalls", &ReportViews::syscalls},
      {"zones", &ReportViews::zones},       {"by_state", &ReportViews::by_state},
      {"spans", &ReportViews::spans},       {"stack_chart", &ReportViews::stack_chart},
      {"markers", &ReportViews::markers},
  };
  auto it = kViews.find(word);
  if (it == kViews.end()) return false;
  v->*(it->second) = true;
  return true;
}

}  // namespace

namespace {

using Setter = std::function<Status(const std::string& name, const std::string& value)>;
using Setters = std::map<std::string, Setter>;

// What is shown and how: the capture, the views, metric, granularity, look
// and bounds.
void AddShapeSetters(ReportParams& p, Setters* setters) {
  ReportQuery& q = p.query;
  setters->insert({
      {"capture", [&](auto&, auto& v) { return p.capture = v, OkStatus(); }},
      {"diff", [&](auto&, auto& v) { return p.diff = v, OkStatus(); }},
      {"views",
       [&](auto& n, auto& v) {
         size_t from = 0;
         while (from <= v.size()) {
           size_t comma = std::min(v.find(',', from), v.size());
           if (!SetView(v.substr(from, comma - from), &q.views)) {
             return Bad(n, v,
                        "views are flat, tree, inverted, threads, lanes, syscalls, zones, "
                        "by_state, spans, "
                        "stack_chart, markers "
                        "(comma-separated)");
           }
           from = comma + 1;
         }
         return OkStatus();
       }},
      {"metric",
       [&](auto& n, auto& v) {
         Metric m;
         if (!ParseMetric(v, &m)) return Bad(n, v, "cpu, offcpu or wall");
         q.metric = m;
         return OkStatus();
       }},
      {"granularity",
       [&](auto& n, auto& v) {
         if (v == "function") return q.granularity = Granularity::kFunction, OkStatus();
         if (v == "line") return q.granularity = Granularity::kLine, OkStatus();
         if (v == "address") return q.granularity = Granularity::kAddress, OkStatus();
         return Bad(n, v, "function, line or address");
       }},
      {"look",
       [&](auto& n, auto& v) {
         if (!ParseLook(v, &q.look)) return Bad(n, v, "mixed, python, js or native");
         return OkStatus();
       }},
      {"inlines",
       [&](auto& n, auto& v) {
         if (v != "on" && v != "off") return Bad(n, v, "on or off");
         q.inlines = v == "on";
         return OkStatus();
       }},
      // Repeatable: each names one function, or one module.
      {"merge",
       [&](auto& n, auto& v) {
         if (v.empty()) return Bad(n, v, "a function's name as the views show it");
         q.merge.push_back(v);
         return OkStatus();
       }},
      {"collapse",
       [&](auto& n, auto& v) {
         if (v.empty()) return Bad(n, v, "a module's file name as the views show it");
         q.collapse.push_back(v);
         return OkStatus();
       }},
      {"collapse_recursion",
       [&](auto& n, auto& v) {
         if (v != "0" && v != "1") return Bad(n, v, "0 or 1");
         q.collapse_recursion = v == "1";
         return OkStatus();
       }},
      {"min_percent",
       [&](auto& n, auto& v) {
         if (!Whole(v, &q.min_percent) || !std::isfinite(q.min_percent) || q.min_percent < 0 ||
             q.min_percent > 100)
           return Bad(n, v, "a number from 0 to 100");
         return OkStatus();
       }},
      {"top",
       [&](auto& n, auto& v) {
         if (!Whole(v, &q.top) || q.top == 0 || q.top > 1000000)
           return Bad(n, v, "a count from 1 to 1000000");
         return OkStatus();
       }},
      {"lane_width",
       [&](auto& n, auto& v) {
         if (!Whole(v, &q.lane_width) || q.lane_width < 4 || q.lane_width > 4000)
           return Bad(n, v, "a count of columns from 4 to 4000");
         return OkStatus();
       }},
      {"source",
       [&](auto& n, auto& v) {
         if (v.empty() || v.size() > 4096) return Bad(n, v, "a function's name");
         return q.source = v, OkStatus();
       }},
      {"asm",
       [&](auto& n, auto& v) {
         if (v.empty() || v.size() > 4096) return Bad(n, v, "a function's name");
         return q.assembly = v, OkStatus();
       }},
      {"neighbors",
       [&](auto& n, auto& v) {
         if (v.empty() || v.size() > 4096) return Bad(n, v, "a function's name");
         return q.neighbors = v, OkStatus();
       }},
  });
}

// Which samples: thread, process, time, focus, zone, label, exclude (the time as
// given in `time`, for the filter's description).
void AddFilterSetters(ReportQuery& q, std::string* time_text, Setters* setters) {
  std::string& time = *time_text;
  setters->insert({
      {"thread", [&](auto&, auto& v) { return q.filter.thread = v, OkStatus(); }},
      {"pid",
       [&](auto& n, auto& v) {
         int32_t pid;
         if (!Whole(v, &pid) || pid <= 0) return Bad(n, v, "a process id");
         q.filter.pid = pid;
         return OkStatus();
       }},
      {"time",
       [&](auto& n, auto& v) {
         time = v;
         Status parsed = ParseTimeRange(v, &q.filter);
         return parsed.ok() ? parsed : Bad(n, v, parsed.message());
       }},
      {"focus", [&](auto&, auto& v) { return q.filter.focus = v, OkStatus(); }},
      {"zone", [&](auto&, auto& v) { return q.filter.zone = v, OkStatus(); }},
      {"label",
       [&](auto& n, auto& v) {
         Status parsed = ParseLabel(v, &q.filter);
         return parsed.ok() ? parsed : Bad(n, v, parsed.message());
       }},
      {"exclude", [&](auto&, auto& v) { return q.filter.exclude = v, OkStatus(); }},
      {"focus_path",
       [&](auto& n, auto& v) {
         Status parsed = ParseCallPath(v, &q.filter);
         return parsed.ok() ? parsed : Bad(n, v, parsed.message());
       }},
  });
}

}  // namespace

Result<ReportParams> ParseReportParams(
    const std::vector<std::pair<std::string, std::string>>& params) {
  ReportParams p;
  ReportQuery& q = p.query;
  std::string time;
  Setters setters;
  AddShapeSetters(p, &setters);
  AddFilterSetters(q, &time, &setters);
  std::set<std::string> seen;
  for (const auto& [name, value] : params) {
    auto it = setters.find(name);
    if (it == setters.end()) {
      return Status::Error(StatusCode::kInvalidArgument, "unknown parameter '" + name + "'");
    }
    if (name != "merge" && name != "collapse" && !seen.insert(name).second) {
      return Status::Error(StatusCode::kInvalidArgument, "parameter " + name + " given twice");
    }
    RETURN_IF_ERROR(it->second(name, value));
  }
  q.filter_text = DescribeFilter(q.filter, time);
  return p;
}

std::string DescribeFilter(const FilterSpec& spec, const std::string& time) {
  std::string f;
  auto add = [&](const std::string& part) { f += (f.empty() ? "" : ", ") + part; };
  if (spec.pid) add("pid " + std::to_string(*spec.pid));
  if (!spec.thread.empty()) add("thread " + spec.thread);
  if (!time.empty()) add("time " + time);
  if (!spec.focus.empty()) add("focus /" + spec.focus + "/");
  if (!spec.exclude.empty()) add("exclude /" + spec.exclude + "/");
  if (!spec.focus_path.empty()) add("focus path " + JoinCallPath(spec.focus_path));
  if (!spec.zone.empty()) add("zone " + spec.zone);
  for (const auto& [key, value] : spec.labels) add("label " + key + "=" + value);
  return f;
}

}  // namespace microscope::analysis
