#include "formats/trace_json.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "formats/gzip.h"

namespace microscope::formats {
namespace {

using capture::kNone;
using capture::TraceEventKind;
using capture::TraceTrackKind;
using json = nlohmann::json;

// Times past this many microseconds (some 31 years) are not a trace's.
constexpr double kMaxMicros = 1e15;

// A pid or tid as the trace spells it: a number's digits, or the string.
std::string IdText(const json& v) {
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_float()) {
    const double d = v.get<double>();
    return std::isfinite(d) && std::fabs(d) < 9e18 ? std::to_string(int64_t(d)) : v.dump();
  }
  if (v.is_string()) return v.get<std::string>();
  return "";
}

// An async or flow event's id: "id", or "id2"'s "local" or "global".
std::string EventId(const json& e) {
  if (auto it = e.find("id"); it != e.end()) return IdText(*it);
  if (auto it = e.find("id2"); it != e.end() && it->is_object()) {
    if (auto g = it->find("global"); g != it->end()) return "global:" + IdText(*g);
    if (auto l = it->find("local"); l != it->end()) return "local:" + IdText(*l);
  }
  return "";
}

// A number, or a string holding one (as Perfetto accepts).
std::optional<double> Number(const json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return d;
  }
  return std::nullopt;
}

bool IsDeviceCategory(const std::string& cat) {
  return cat == "kernel" || cat.rfind("gpu_", 0) == 0 || cat == "Kernel" || cat == "Memcpy" ||
         cat == "Memset";
}
bool IsLaunchCategory(const std::string& cat) {
  return cat == "cuda_runtime" || cat == "cuda_driver" || cat == "runtime" || cat == "Runtime";
}

struct Pending {
  int64_t start = 0;
  uint64_t duration = 0;
  uint32_t track = 0;
  uint32_t name = kNone;
  uint32_t category = kNone;
  uint32_t args = kNone;
  TraceEventKind kind = TraceEventKind::kSpan;
  double value = 0;
};

struct FlowPoint {
  std::string key;  // category, name and id
  char phase = 's';
  bool enclosing = true;  // bound to the slice around it (else the next to begin)
  uint32_t track = 0;
  int64_t ts = 0;
  size_t order = 0;
};

class Builder {
 public:
  explicit Builder(const TraceJsonLimits& limits) : limits_(limits) {}

  Status Event(const json& e, size_t index) {
    auto fail = [&](const std::string& what) {
      return Status::Error(StatusCode::kDataLoss, "event " + std::to_string(index) + ": " + what);
    };
    if (!e.is_object()) return fail("not a JSON object");
    auto ph_it = e.find("ph");
    if (ph_it == e.end() || !ph_it->is_string() || ph_it->get_ref<const std::string&>().empty())
      return fail("no \"ph\" (its phase)");
    const std::string& ph = ph_it->get_ref<const std::string&>();
    const std::string pid = e.contains("pid") ? IdText(e["pid"]) : "";
    const std::string tid = e.contains("tid") ? IdText(e["tid"]) : "";
    std::string name;
    if (auto it = e.find("name"); it != e.end() && it->is_string()) name = it->get<std::string>();
    if (ph == "M") return Metadata(e, name, pid, tid);
    int64_t ts = 0;
    {
      auto it = e.find("ts");
      std::optional<double> v = it == e.end() ? std::nullopt : Number(*it);
      if (!v) return fail("\"ts\" is missing or not a number (phase " + ph + ")");
      if (!std::isfinite(*v) || std::fabs(*v) > kMaxMicros)
        return fail("\"ts\" " + it->dump() + " is not a time in microseconds");
      ts = Micros(*v);
    }
    std::string cat;
    if (auto it = e.find("cat"); it != e.end() && it->is_string()) cat = it->get<std::string>();
    const uint32_t args = Args(e);
    if (args_too_large_) {
      args_too_large_ = false;
      ++args_left_out_;
    }
    const char p = ph.size() == 1 ? ph[0] : '?';
    switch (p) {
      case 'X': {
        auto it = e.find("dur");
        std::optional<double> d = it == e.end() ? std::optional<double>(0.0) : Number(*it);
        if (!d || !std::isfinite(*d) || *d > kMaxMicros)
          return fail("\"dur\" is not a duration in microseconds");
        if (*d < 0) {
          ++negative_durations_;
          return OkStatus();
        }
        const uint32_t track = ThreadTrack(pid, tid);
        if (IsDeviceCategory(cat)) device_tracks_.insert(track);
        return Add({ts, uint64_t(Micros(*d)), track, Intern(name), Cat(cat), args,
                    TraceEventKind::kSpan, 0},
                   e, cat, index);
      }
      case 'B': {
        const uint32_t track = ThreadTrack(pid, tid);
        open_[track].push_back({ts, 0, track, Intern(name), Cat(cat), args});
        return OkStatus();
      }
      case 'E':
        return EndSpan(open_[ThreadTrack(pid, tid)], ts, args, e, cat, index);
      case 'i':
      case 'I':
      case 'R': {
        std::string scope = "t";
        if (auto it = e.find("s"); it != e.end() && it->is_string()) scope = it->get<std::string>();
        uint32_t track;
        if (scope == "g") {
          track = Track(TraceTrackKind::kProcess, "", "", "global", "global", &global_tracks_, "");
        } else if (scope == "p") {
          track = Track(TraceTrackKind::kProcess, pid, "", "", "", &process_tracks_, pid);
        } else {
          track = ThreadTrack(pid, tid);
        }
        return Add({ts, 0, track, Intern(name), Cat(cat), args, TraceEventKind::kInstant, 0}, e,
                   cat, index);
      }
      case 'C': {
        auto it = e.find("args");
        if (it == e.end() || !it->is_object()) return OkStatus();
        const std::string id = EventId(e);
        for (const auto& [key, value] : it->items()) {
          std::optional<double> v = Number(value);
          if (!v || !std::isfinite(*v)) continue;
          std::string series = name;
          if (!id.empty()) series += " id: " + id;
          if (it->size() > 1 || key != "value") series += " " + key;
          const uint32_t track = Track(TraceTrackKind::kCounter, pid, "", series, series,
                                       &counter_tracks_, pid + "\n" + series);
          RETURN_IF_ERROR(
              Add({ts, 0, track, Intern(series), Cat(cat), kNone, TraceEventKind::kCounter, *v}, e,
                  cat, index));
        }
        return OkStatus();
      }
      case 'b':
      case 'S':
      case 'e':
      case 'F':
      case 'n':
      case 'T':
      case 'p': {
        const std::string id = EventId(e);
        if (id.empty()) return fail("an async event without an \"id\"");
        // Perfetto's rule: a local id (or a plain one) is the process's, a
        // global one the trace's; the category is part of the identity.
        const std::string scope = id.rfind("global:", 0) == 0 ? "" : pid;
        const std::string key = scope + "\n" + cat + "\n" + id;
        auto found = async_tracks_.find(key);
        if (found == async_tracks_.end()) {
          if (p == 'e' || p == 'F') {
            ++unmatched_ends_;
            return OkStatus();
          }
          // Named by its first event, as Perfetto names an async track.
          Track(TraceTrackKind::kAsync, scope, id, name, "", &async_tracks_, key);
          found = async_tracks_.find(key);
        }
        const uint32_t track = found->second;
        auto& open = async_open_[key];
        if (p == 'b' || p == 'S') {
          open.push_back({ts, 0, track, Intern(name), Cat(cat), args});
        } else if (p == 'e' || p == 'F') {
          return EndSpan(open, ts, args, e, cat, index);
        } else {
          return Add({ts, 0, track, Intern(name), Cat(cat), args, TraceEventKind::kInstant, 0}, e,
                     cat, index);
        }
        return OkStatus();
      }
      case 's':
      case 't':
      case 'f': {
        const std::string id = EventId(e);
        if (id.empty()) return fail("a flow event without an \"id\"");
        bool enclosing = p != 'f';
        if (auto it = e.find("bp"); it != e.end() && it->is_string() && *it == "e")
          enclosing = true;
        flows_.push_back({cat + "\n" + name + "\n" + id, p, enclosing, ThreadTrack(pid, tid), ts,
                          flows_.size()});
        if (flows_.size() > limits_.max_events) return fail("more flow events than events allowed");
        return OkStatus();
      }
      default:
        ++skipped_phases_[ph];
        ++out_.trace.skipped;
        return OkStatus();
    }
  }

  void TopLevel(const std::string& key, const json& value) {
    capture::Trace& t = out_.trace;
    if (key == "displayTimeUnit" && value.is_string()) {
      display_unit_ = value.get<std::string>();
    } else if (key == "baseTimeNanoseconds" && value.is_number()) {
      // Wall-clock nanoseconds: an integer; a number past int64 is no time.
      const double d = value.get<double>();
      if (value.is_number_integer() &&
          !(value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX))) {
        out_.base_time = value.get<int64_t>();
      } else if (std::isfinite(d) && d >= 0 && d < 9e18) {
        out_.base_time = int64_t(d);
      } else {
        t.notes.push_back("baseTimeNanoseconds " + value.dump() + " is not a time: not used");
      }
      kineto_ = true;
    } else if (key == "deviceProperties") {
      t.device_properties = value.dump();
      kineto_ = true;
    } else if (key == "schemaVersion") {
      kineto_ = true;
    } else if (key == "traceName" && value.is_string()) {
      trace_name_ = value.get<std::string>();
    } else if (key == "systemTraceEvents") {
      t.notes.push_back("systemTraceEvents (ftrace text) is not imported");
    } else if (key == "samples" || key == "stackFrames") {
      if (!stack_note_) {
        t.notes.push_back("the trace's sampled stacks (samples, stackFrames) are not imported");
        stack_note_ = true;
      }
    }
  }

  Result<ParsedTrace> Finish() {
    capture::Trace& t = out_.trace;
    t.format = kineto_ ? "kineto" : "chrome-json";
    if (kineto_) t.tool = "PyTorch profiler (Kineto)";
    if (!trace_name_.empty()) t.notes.push_back("trace name: " + trace_name_);
    if (!display_unit_.empty() && display_unit_ != "ms") {
      t.notes.push_back("displayTimeUnit \"" + display_unit_ +
                        "\" is a display preference: the times were read as microseconds, as "
                        "catapult and Perfetto read them");
    }
    size_t unended = 0;
    for (const auto& [track, open] : open_) unended += open.size();
    for (const auto& [key, open] : async_open_) unended += open.size();
    if (unended > 0) {
      t.skipped += unended;
      t.notes.push_back(std::to_string(unended) +
                        " begin events had no end: left out, not drawn to the trace's end");
    }
    if (unmatched_ends_ > 0) {
      t.skipped += unmatched_ends_;
      t.notes.push_back(std::to_string(unmatched_ends_) + " end events had no begin: left out");
    }
    if (negative_durations_ > 0) {
      t.skipped += negative_durations_;
      t.notes.push_back(std::to_string(negative_durations_) +
                        " complete events had a negative duration: left out");
    }
    if (args_left_out_ > 0) {
      t.notes.push_back("the arguments of " + std::to_string(args_left_out_) +
                        " events were over " + std::to_string(limits_.max_args_bytes) +
                        " bytes of JSON: left out");
    }
    for (const auto& [ph, n] : skipped_phases_) {
      t.notes.push_back(std::to_string(n) + " events of phase \"" + ph + "\" are not imported");
    }
    NameTracks();
    SortEvents();
    Depths();
    BindFlows();
    LinkCorrelations();
    return std::move(out_);
  }

 private:
  int64_t Micros(double us) {
    const double ns = us * 1000.0;
    if (ns != std::floor(ns) || std::fmod(ns, 1000.0) != 0) out_.resolution_ns = 1;
    return std::llround(ns);
  }

  uint32_t Intern(const std::string& s) {
    auto [it, fresh] = strings_.try_emplace(s, uint32_t(out_.trace.strings.size()));
    if (fresh) out_.trace.strings.push_back(s);
    return it->second;
  }
  uint32_t Cat(const std::string& cat) { return cat.empty() ? kNone : Intern(cat); }

  uint32_t Args(const json& e) {
    auto it = e.find("args");
    if (it == e.end() || !it->is_object() || it->empty()) return kNone;
    std::string text = it->dump();
    if (text.size() > limits_.max_args_bytes) {
      args_too_large_ = true;
      return kNone;
    }
    return Intern(text);
  }

  uint32_t Track(TraceTrackKind kind, const std::string& pid, const std::string& tid,
                 const std::string& name, const std::string& group,
                 std::unordered_map<std::string, uint32_t>* index, const std::string& key) {
    auto [it, fresh] = index->try_emplace(key, uint32_t(out_.trace.tracks.size()));
    if (fresh) {
      capture::TraceTrack k;
      k.kind = kind;
      k.trace_pid = pid;
      k.trace_tid = tid;
      k.name = name;
      k.group = group;
      out_.trace.tracks.push_back(std::move(k));
    }
    return it->second;
  }
  uint32_t ThreadTrack(const std::string& pid, const std::string& tid) {
    return Track(TraceTrackKind::kThread, pid, tid, "", "", &thread_tracks_, pid + "\n" + tid);
  }

  // Ends the innermost span open in `open` at `ts` (an end event's work).
  Status EndSpan(std::vector<Pending>& open, int64_t ts, uint32_t args, const json& e,
                 const std::string& cat, size_t index) {
    if (open.empty()) {
      ++unmatched_ends_;
      return OkStatus();
    }
    Pending span = open.back();
    open.pop_back();
    if (ts < span.start) {
      return Status::Error(StatusCode::kDataLoss,
                           "event " + std::to_string(index) + ": ends before its begin event");
    }
    span.duration = uint64_t(ts - span.start);
    if (span.args == kNone) span.args = args;
    return Add(span, e, cat, index);
  }

  Status Add(const Pending& p, const json& e, const std::string& cat, size_t index) {
    if (pending_.size() >= limits_.max_events) {
      return Status::Error(StatusCode::kTooLarge,
                           "event " + std::to_string(index) + ": more than " +
                               std::to_string(limits_.max_events) + " events (the import's limit)");
    }
    if (auto it = e.find("args"); it != e.end() && it->is_object()) {
      if (auto c = it->find("correlation"); c != it->end() && c->is_number_integer()) {
        const bool device = IsDeviceCategory(cat);
        if (device || IsLaunchCategory(cat)) {
          correlations_.push_back({c->get<int64_t>(), device, pending_.size()});
        }
      }
    }
    pending_.push_back(p);
    return OkStatus();
  }

  Status Metadata(const json& e, const std::string& name, const std::string& pid,
                  const std::string& tid) {
    auto args = e.find("args");
    if (args == e.end() || !args->is_object()) return OkStatus();
    auto arg = [&](const char* key) -> const json* {
      auto it = args->find(key);
      return it == args->end() ? nullptr : &*it;
    };
    if (name == "process_name") {
      if (const json* v = arg("name"); v && v->is_string())
        process_names_[pid] = v->get<std::string>();
    } else if (name == "process_labels") {
      if (const json* v = arg("labels"); v && v->is_string())
        process_labels_[pid] = v->get<std::string>();
    } else if (name == "thread_name") {
      if (const json* v = arg("name"); v && v->is_string())
        thread_names_[pid + "\n" + tid] = v->get<std::string>();
    } else if (name == "process_sort_index" || name == "thread_sort_index") {
      const json* v = arg("sort_index");
      if (v && v->is_number_integer()) {
        const auto i = int32_t(std::clamp<int64_t>(v->get<int64_t>(), INT32_MIN, INT32_MAX));
        if (name == "process_sort_index") {
          process_sort_[pid] = i;
        } else {
          thread_sort_[pid + "\n" + tid] = i;
        }
      }
    }
    return OkStatus();
  }

  // Names from the metadata: a thread track by its thread's name (else "tid
  // N"), every track's group by its process's name and labels (else "pid N",
  // or the pid's own text when it is not a number).
  void NameTracks() {
    for (size_t i = 0; i < out_.trace.tracks.size(); ++i) {
      capture::TraceTrack& k = out_.trace.tracks[i];
      if (k.kind == TraceTrackKind::kThread) {
        if (device_tracks_.count(uint32_t(i))) k.kind = TraceTrackKind::kDevice;
        auto it = thread_names_.find(k.trace_pid + "\n" + k.trace_tid);
        if (it != thread_names_.end() && !it->second.empty()) {
          k.name = it->second;
          // Kineto names streams "stream 7 " (an empty postfix).
          while (!k.name.empty() && k.name.back() == ' ') k.name.pop_back();
        } else {
          k.name = k.trace_tid.empty() ? "(no tid)" : "tid " + k.trace_tid;
        }
        if (auto s = thread_sort_.find(k.trace_pid + "\n" + k.trace_tid); s != thread_sort_.end())
          k.sort_index = s->second;
      }
      if (k.group.empty() && !k.trace_pid.empty()) {
        auto it = process_names_.find(k.trace_pid);
        const bool number = k.trace_pid.find_first_not_of("-0123456789") == std::string::npos;
        k.group = it != process_names_.end() && !it->second.empty()
                      ? it->second
                      : (number ? "pid " + k.trace_pid : k.trace_pid);
        if (auto l = process_labels_.find(k.trace_pid); l != process_labels_.end())
          k.group += " [" + l->second + "]";
      }
      if (k.group.empty()) k.group = "global";
      if (k.kind == TraceTrackKind::kProcess && k.name.empty()) k.name = "instants";
      if (k.kind != TraceTrackKind::kThread && k.kind != TraceTrackKind::kDevice) {
        if (auto s = process_sort_.find(k.trace_pid); s != process_sort_.end())
          k.sort_index = s->second;
      }
    }
  }

  // Events in start order (longer spans first at equal starts, so that a
  // parent comes before its children), the permutation kept for the flows.
  void SortEvents() {
    std::vector<size_t> order(pending_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const Pending& x = pending_[a];
      const Pending& y = pending_[b];
      if (x.start != y.start) return x.start < y.start;
      return x.duration > y.duration;
    });
    position_.assign(pending_.size(), 0);
    capture::TraceEvents& ev = out_.trace.events;
    bool any_category = false, any_value = false, any_args = false;
    for (const Pending& p : pending_) {
      any_category |= p.category != kNone;
      any_value |= p.kind == TraceEventKind::kCounter;
      any_args |= p.args != kNone;
    }
    for (size_t i = 0; i < order.size(); ++i) {
      const Pending& p = pending_[order[i]];
      position_[order[i]] = i;
      ev.track.push_back(p.track);
      ev.kind.push_back(p.kind);
      ev.start.push_back(0);
      ev.duration.push_back(p.duration);
      ev.name.push_back(p.name == kNone ? Intern("") : p.name);
      if (any_category) ev.category.push_back(p.category);
      if (any_value) ev.value.push_back(p.value);
      if (any_args) ev.args.push_back(p.args);
      out_.own_start.push_back(p.start);
    }
    pending_.clear();
    pending_.shrink_to_fit();
  }

  // Each span's nesting on its track: the spans still open at its start.
  void Depths() {
    capture::TraceEvents& ev = out_.trace.events;
    std::unordered_map<uint32_t, std::vector<int64_t>> open;  // ends, per track
    std::vector<uint32_t> depth(ev.size(), 0);
    bool any = false;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.kind[i] != TraceEventKind::kSpan) continue;
      auto& ends = open[ev.track[i]];
      const int64_t start = out_.own_start[i];
      while (!ends.empty() && ends.back() <= start) ends.pop_back();
      depth[i] = uint32_t(std::min<size_t>(ends.size(), capture::kMaxStackDepth));
      any |= depth[i] > 0;
      ends.push_back(start + int64_t(ev.duration[i]));
    }
    if (any) ev.depth = std::move(depth);
  }

  // The span a flow point binds to: the innermost span of its track open at
  // its time, or for an `f` without "bp":"e" the next span to begin there.
  std::optional<uint32_t> Bind(const FlowPoint& f) const {
    auto it = spans_by_track_.find(f.track);
    if (it == spans_by_track_.end()) return std::nullopt;
    const std::vector<uint32_t>& spans = it->second;  // in start order
    const capture::TraceEvents& ev = out_.trace.events;
    auto starts_after = [&](int64_t ts, uint32_t e) { return ts < out_.own_start[e]; };
    auto first_after = std::upper_bound(spans.begin(), spans.end(), f.ts, starts_after);
    if (!f.enclosing) {
      auto at = std::lower_bound(spans.begin(), spans.end(), f.ts,
                                 [&](uint32_t e, int64_t ts) { return out_.own_start[e] < ts; });
      if (at == spans.end()) return std::nullopt;
      return *at;
    }
    // Back from the last span starting at or before it: the first that
    // still covers it is the innermost (spans nest; deeper ones start later).
    size_t looked = 0;
    for (auto r = first_after; r != spans.begin() && looked < 4096; ++looked) {
      --r;
      if (out_.own_start[*r] + int64_t(ev.duration[*r]) >= f.ts) return *r;
      if (ev.DepthAt(*r) == 0) break;  // an outermost span that ended: none covers it
    }
    return std::nullopt;
  }

  void BindFlows() {
    if (flows_.empty()) return;
    const capture::TraceEvents& ev = out_.trace.events;
    for (size_t i = 0; i < ev.size(); ++i) {
      if (ev.kind[i] == TraceEventKind::kSpan) spans_by_track_[ev.track[i]].push_back(uint32_t(i));
    }
    std::stable_sort(flows_.begin(), flows_.end(), [](const FlowPoint& a, const FlowPoint& b) {
      return std::tie(a.key, a.ts, a.order) < std::tie(b.key, b.ts, b.order);
    });
    size_t unbound = 0, linked = 0;
    std::optional<uint32_t> from;
    std::string key;
    for (const FlowPoint& f : flows_) {
      if (f.key != key) {
        key = f.key;
        from.reset();
      }
      std::optional<uint32_t> at = Bind(f);
      if (!at) {
        ++unbound;
        continue;
      }
      if (f.phase != 's' && from && *from != *at) {
        const std::string name = f.key.substr(f.key.find('\n') + 1);
        AddFlow(*from, *at, Intern(name.substr(0, name.find('\n'))), FlowId(f.key));
        ++linked;
      }
      from = (f.phase == 'f') ? std::nullopt : at;
    }
    if (unbound > 0) {
      out_.trace.notes.push_back(std::to_string(unbound) +
                                 " flow events had no slice to bind to: left out");
    }
  }

  static uint64_t FlowId(const std::string& key) {
    const std::string id = key.substr(key.rfind('\n') + 1);
    char* end = nullptr;
    const uint64_t v = std::strtoull(id.c_str(), &end, 10);
    return end != id.c_str() ? v : 0;
  }

  void AddFlow(uint32_t from, uint32_t to, uint32_t name, uint64_t id) {
    capture::TraceFlows& f = out_.trace.flows;
    if (!flow_pairs_.insert({from, to}).second) return;
    f.from.push_back(from);
    f.to.push_back(to);
    f.name.push_back(name);
    f.id.push_back(id);
  }

  // A CUDA launch and the kernel or copy it started share a correlation id
  // (Kineto's args.correlation): a flow between the two where the trace's
  // own flow events did not give one.
  void LinkCorrelations() {
    std::map<int64_t, std::pair<std::optional<uint32_t>, std::vector<uint32_t>>> by_id;
    for (const Correlation& c : correlations_) {
      auto& [launch, targets] = by_id[c.id];
      const uint32_t at = uint32_t(position_[c.event]);
      if (c.device) {
        targets.push_back(at);
      } else if (!launch) {
        launch = at;
      }
    }
    const uint32_t name = correlations_.empty() ? kNone : Intern("correlation");
    for (const auto& [id, pair] : by_id) {
      if (!pair.first) continue;
      for (uint32_t t : pair.second) AddFlow(*pair.first, t, name, uint64_t(id));
    }
  }

  struct Correlation {
    int64_t id;
    bool device;
    size_t event;  // in pending_ order
  };

  TraceJsonLimits limits_;
  ParsedTrace out_;
  std::unordered_map<std::string, uint32_t> strings_;
  std::unordered_map<std::string, uint32_t> thread_tracks_, process_tracks_, global_tracks_,
      counter_tracks_, async_tracks_;
  std::unordered_map<uint32_t, std::vector<Pending>> open_;
  std::unordered_map<std::string, std::vector<Pending>> async_open_;
  std::vector<Pending> pending_;
  std::vector<size_t> position_;
  std::vector<FlowPoint> flows_;
  std::vector<Correlation> correlations_;
  std::unordered_map<uint32_t, std::vector<uint32_t>> spans_by_track_;
  std::set<std::pair<uint32_t, uint32_t>> flow_pairs_;
  std::set<uint32_t> device_tracks_;
  std::map<std::string, std::string> process_names_, process_labels_, thread_names_;
  std::map<std::string, int32_t> process_sort_, thread_sort_;
  std::map<std::string, uint64_t> skipped_phases_;
  std::string display_unit_, trace_name_;
  uint64_t unmatched_ends_ = 0, negative_durations_ = 0, args_left_out_ = 0;
  bool args_too_large_ = false, kineto_ = false, stack_note_ = false;
};

}  // namespace

bool LooksLikeTraceJson(std::span<const uint8_t> bytes) {
  if (IsGzip(bytes)) return true;  // told apart once inflated
  for (uint8_t b : bytes) {
    if (b == ' ' || b == '\t' || b == '\n' || b == '\r') continue;
    return b == '[' || b == '{';
  }
  return false;
}

Result<ParsedTrace> ReadTraceJson(std::span<const uint8_t> bytes, const TraceJsonLimits& limits) {
  std::vector<uint8_t> inflated;
  if (IsGzip(bytes)) {
    ASSIGN_OR_RETURN(inflated, Gunzip(bytes, limits.max_bytes));
    bytes = inflated;
  } else if (bytes.size() > limits.max_bytes) {
    return Status::Error(StatusCode::kTooLarge, "over " + std::to_string(limits.max_bytes >> 20) +
                                                    " MiB of JSON (the import's limit)");
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (text[first] != '[' && text[first] != '{')) {
    return Status::Error(StatusCode::kDataLoss,
                         "not a Chrome trace: JSON text starting with [ or { was expected");
  }
  const bool array_form = text[first] == '[';
  // The format allows an array without its closing bracket (a trace still
  // being written, or cut short): read up to its last whole event.
  std::string closed;
  bool unclosed = false;
  if (array_form) {
    const size_t last = text.find_last_not_of(" \t\r\n");
    if (text[last] != ']') {
      size_t end = last + 1;
      if (text[last] == ',') end = last;
      closed.assign(text.substr(0, end));
      closed += "]";
      text = closed;
      unclosed = true;
    }
  }
  Builder builder(limits);
  Status status = OkStatus();
  size_t index = 0;
  std::string top_key;
  bool saw_events = false;
  const int event_depth = array_form ? 1 : 2;
  json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (!status.ok()) return false;
    if (!array_form && depth == 1 && event == json::parse_event_t::key) {
      top_key = parsed.get<std::string>();
      saw_events |= top_key == "traceEvents";
      return true;
    }
    const bool in_events = array_form || top_key == "traceEvents";
    if (in_events && depth == event_depth &&
        (event == json::parse_event_t::object_end || event == json::parse_event_t::value)) {
      status = builder.Event(parsed, index++);
      return false;  // kept no longer than it took to read
    }
    if (!array_form && depth == 1 &&
        (event == json::parse_event_t::object_end || event == json::parse_event_t::array_end ||
         event == json::parse_event_t::value)) {
      if (top_key != "traceEvents") builder.TopLevel(top_key, parsed);
      return false;  // what was needed of it is taken
    }
    return true;
  };
  try {
    json doc = json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                           /*ignore_comments=*/false);
    (void)doc;
  } catch (const json::parse_error& e) {
    if (!status.ok()) return status;
    std::string what = e.what();
    if (auto colon = what.find("syntax error"); colon != std::string::npos)
      what = what.substr(colon);
    return Status::Error(StatusCode::kDataLoss,
                         "byte " + std::to_string(e.byte) + ": malformed JSON (" + what + ")");
  } catch (const json::exception& e) {
    if (!status.ok()) return status;
    return Status::Error(StatusCode::kDataLoss, std::string("malformed trace: ") + e.what());
  }
  RETURN_IF_ERROR(status);
  if (!array_form && !saw_events) {
    return Status::Error(StatusCode::kDataLoss,
                         "not a Chrome trace: an object without traceEvents");
  }
  Result<ParsedTrace> out = builder.Finish();
  if (out.ok() && unclosed) {
    out->trace.notes.push_back(
        "the event array had no closing bracket (a trace cut short): read to its last whole event");
  }
  return out;
}

}  // namespace microscope::formats
