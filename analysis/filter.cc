#include "analysis/filter.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <set>
#include <string_view>

#include <re2/re2.h>

#include "analysis/zones.h"
#include "base/duration.h"

namespace microscope::analysis {
namespace {

// RE2 matches in time linear in the name, whatever the pattern (no
// backtracking: `(.*.*)*QQQ` costs what `QQQ` does), and refuses what it
// cannot: backreferences, lookaround. The pattern's length and its
// compiled program are bounded, so a query cannot make the server build a
// huge automaton either.
constexpr size_t kMaxPattern = 4096;
constexpr int64_t kMaxProgramBytes = 8 << 20;

Result<std::unique_ptr<RE2>> Compile(const std::string& pattern, const char* what) {
  if (pattern.empty()) return std::unique_ptr<RE2>();
  if (pattern.size() > kMaxPattern) {
    return Status::Error(std::string(what) + " '" + pattern.substr(0, 40) + "...' is longer than " +
                         std::to_string(kMaxPattern) + " characters");
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kMaxProgramBytes);
  auto re = std::make_unique<RE2>(pattern, options);
  if (re->error_code() == RE2::ErrorPatternTooLarge) {
    return Status::Error(std::string(what) + " '" + pattern.substr(0, 80) +
                         (pattern.size() > 80 ? "..." : "") + "' compiles to a program over " +
                         std::to_string(kMaxProgramBytes >> 20) + " MiB: use a smaller regex");
  }
  if (!re->ok()) {
    return Status::Error(std::string(what) + " '" + pattern + "' is not a valid regex (" +
                         re->error() + "; RE2 syntax: no backreferences or lookaround)");
  }
  return re;
}

}  // namespace

Status ParseTimeRange(const std::string& text, FilterSpec* spec) {
  size_t dots = text.find("..");
  if (dots == std::string::npos) {
    return Status::Error("--time '" + text + "': use FROM..TO, e.g. 1s..2.5s, ..500ms, 2s..");
  }
  std::string from = text.substr(0, dots), to = text.substr(dots + 2);
  if (!from.empty()) {
    Result<uint64_t> v = ParseDuration(from);
    if (!v.ok()) return v.status().WithContext("--time");
    spec->from_ns = *v;
  }
  if (!to.empty()) {
    Result<uint64_t> v = ParseDuration(to);
    if (!v.ok()) return v.status().WithContext("--time");
    spec->to_ns = *v;
  }
  if (spec->from_ns && spec->to_ns && *spec->from_ns > *spec->to_ns) {
    return Status::Error("--time '" + text + "': FROM is after TO");
  }
  return OkStatus();
}

Status ParseLabel(const std::string& text, FilterSpec* spec) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::Error("label '" + text + "': use KEY=VALUE, e.g. python.gil=held");
  }
  spec->labels.emplace_back(text.substr(0, eq), text.substr(eq + 1));
  return OkStatus();
}

Status ParseCallPath(const std::string& text, FilterSpec* spec) {
  std::vector<std::string> path;
  for (size_t at = 0;;) {
    const size_t semi = std::min(text.find(';', at), text.size());
    path.push_back(text.substr(at, semi - at));
    if (path.back().empty()) {
      return Status::Error("call path '" + text +
                           "': use function names from the root, separated by ';' "
                           "(main;run;hot)");
    }
    if (semi == text.size()) break;
    at = semi + 1;
  }
  spec->focus_path = std::move(path);
  return OkStatus();
}

std::string JoinCallPath(const std::vector<std::string>& path) {
  std::string out;
  for (const std::string& f : path) out += (out.empty() ? "" : ";") + f;
  return out;
}

bool SampleFilter::InsideRequired(capture::ThreadId thread, uint64_t time) const {
  for (const Spans& by_thread : required_) {
    if (thread >= by_thread.size()) return false;
    const auto& spans = by_thread[thread];
    auto it = std::upper_bound(
        spans.begin(), spans.end(), time,
        [](uint64_t t, const std::pair<uint64_t, uint64_t>& s) { return t < s.first; });
    if (it == spans.begin() || time >= std::prev(it)->second) return false;
  }
  return true;
}

namespace {

// Per thread, the spans in which the thread had label `key` = `value`
// (sorted, merged, [start, end + 1)); an error when no span has the key.
Result<std::vector<std::vector<std::pair<uint64_t, uint64_t>>>> LabelSpans(
    const capture::Capture& c, const std::string& key, const std::string& value) {
  const capture::LabelSpans& l = c.labels;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> spans(c.threads.size());
  bool keyed = false;
  std::set<std::string_view> keys;
  for (size_t i = 0; i < l.size(); ++i) {
    const std::string_view k = c.str(l.key[i]);
    keys.insert(k);
    if (k != key) continue;
    keyed = true;
    if (c.str(l.value[i]) != value || l.thread[i] >= spans.size()) continue;
    const uint64_t end = l.end[i] == UINT64_MAX ? UINT64_MAX : l.end[i] + 1;
    spans[l.thread[i]].push_back({l.start[i], end});
  }
  if (!keyed) {
    std::string known;
    for (std::string_view k : keys) {
      if (known.size() > 200) break;
      known += (known.empty() ? "" : ", ") + std::string(k);
    }
    return Status::Error("no label '" + key + "' in the capture (" +
                         (known.empty() ? "it has no labels" : "labels: " + known) + ")");
  }
  for (auto& list : spans) MergeSpans(&list);
  return spans;
}

}  // namespace

Result<SampleFilter> SampleFilter::Make(const capture::Capture& c, const FunctionKeys& keys,
                                        const FilterSpec& spec, Cancel cancel) {
  SampleFilter f;
  if (spec.empty()) return f;
  f.all_ = false;
  f.thread_keep_.assign(c.threads.size(), 1);
  if (spec.pid || !spec.thread.empty()) {
    char* end = nullptr;
    long tid = std::strtol(spec.thread.c_str(), &end, 10);
    bool by_tid = !spec.thread.empty() && *end == '\0';
    size_t kept = 0;
    for (size_t t = 0; t < c.threads.size(); ++t) {
      const capture::Thread& th = c.threads[t];
      bool keep = true;
      if (spec.pid && c.processes[th.process].pid != *spec.pid) keep = false;
      if (!spec.thread.empty()) {
        keep = keep && (by_tid ? th.tid == tid : c.str(th.name) == spec.thread);
      }
      f.thread_keep_[t] = keep;
      kept += keep;
    }
    if (kept == 0) {
      return Status::Error(spec.thread.empty()
                               ? "no process " + std::to_string(*spec.pid) + " in the capture"
                               : "no thread '" + spec.thread + "' in the capture");
    }
  }
  if (!spec.zone.empty()) {
    const std::vector<capture::ProbeSiteId> sites = ZoneSitesNamed(c, spec.zone);
    if (sites.empty()) {
      std::string known;
      for (size_t s = 0; s < c.probe_sites.size() && known.size() < 200; ++s) {
        if (c.probe_sites.kind[s] != capture::ProbeKind::kZone) continue;
        known += (known.empty() ? "" : ", ") + c.str(c.probe_sites.name[s]);
      }
      return Status::Error("no zone '" + spec.zone + "' in the capture (" +
                           (known.empty() ? "it has no zones" : "zones: " + known) + ")");
    }
    f.required_.push_back(SpansOf(c, PairZones(c), sites));
  }
  for (const auto& [key, value] : spec.labels) {
    ASSIGN_OR_RETURN(Spans spans, LabelSpans(c, key, value));
    f.required_.push_back(std::move(spans));
  }
  if (spec.from_ns) f.from_ = c.settings.start_time + *spec.from_ns;
  if (spec.to_ns) f.to_ = c.settings.start_time + *spec.to_ns;
  ASSIGN_OR_RETURN(auto focus, Compile(spec.focus, "--focus"));
  ASSIGN_OR_RETURN(auto exclude, Compile(spec.exclude, "--exclude"));
  f.needs_focus_ = focus != nullptr || !spec.focus_path.empty();
  // Per key: 1 matches focus, 2 matches exclude (computed once per key).
  std::vector<int8_t> match(keys.size(), -1);
  auto match_of = [&](KeyId k) {
    if (match[k] < 0) {
      const std::string& name = keys.Name(k);
      match[k] = int8_t((focus && RE2::PartialMatch(name, *focus) ? 1 : 0) |
                        (exclude && RE2::PartialMatch(name, *exclude) ? 2 : 0));
    }
    return match[k];
  };
  // Per stack node: bit 1 some frame on the path matches focus, bit 2 exclude.
  std::vector<uint8_t> path(c.stacks.size());
  f.stack_keep_.resize(c.stacks.size());
  for (size_t n = 0; n < c.stacks.size(); ++n) {
    if (cancel.At(n)) return Status::Error(StatusCode::kCancelled, "the query was cancelled");
    uint32_t p = c.stacks.parent[n];
    path[n] =
        uint8_t((p == capture::kNone ? 0 : path[p]) | match_of(keys.KeyOf(c.stacks.frame[n])));
    bool keep = (!focus || (path[n] & 1)) && !(path[n] & 2);
    f.stack_keep_[n] = keep;
  }
  return f;
}

}  // namespace microscope::analysis
