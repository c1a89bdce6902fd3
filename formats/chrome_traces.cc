#include "formats/chrome_traces.h"

#include <map>
#include <utility>

#include "formats/chrome_text.h"

namespace microscope::formats {
namespace {

using capture::TraceEventKind;
using capture::TraceTrackKind;

// Numbers for the tracks and processes an export makes up: above any pid
// or tid the kernel gives (pid_max is at most 2^22), below the zones'
// tracks (chrome_probes.cc).
constexpr int64_t kImportedBase = 900000000;
constexpr int64_t kPerTrace = 1000000;

// Microseconds from the recording's start; before it, negative.
void AppendSince(std::string& out, uint64_t t, uint64_t origin) {
  if (t >= origin) {
    AppendMicros(out, t - origin);
  } else {
    out += '-';
    AppendMicros(out, origin - t);
  }
}

}  // namespace

void AppendImportedTraceEvents(const capture::Capture& c,
                               const std::function<void(const std::string&)>& emit) {
  const uint64_t origin = c.settings.start_time;
  int64_t flow_id = 1;
  for (size_t ti = 0; ti < c.traces.size(); ++ti) {
    const capture::Trace& t = c.traces[ti];
    const int64_t base = kImportedBase + int64_t(ti) * kPerTrace;
    const std::string tool = t.tool.empty() ? "imported" : t.tool;
    // Where each track goes: pid and tid in the export.
    std::vector<std::pair<int64_t, int64_t>> where(t.tracks.size());
    std::map<std::string, int64_t> group_pids;
    for (size_t k = 0; k < t.tracks.size(); ++k) {
      const capture::TraceTrack& tr = t.tracks[k];
      const int64_t tid = base + int64_t(k) + 1;
      std::string name = tool + ": " + tr.name;
      int64_t pid;
      if (tr.pid != 0 && !t.OwnAxis()) {
        pid = tr.pid;
        name += tr.tid != 0 ? " (of thread " + std::to_string(tr.tid) + ")" : " (" + tr.group + ")";
      } else {
        auto [it, fresh] = group_pids.try_emplace(
            tr.group, base + int64_t(group_pids.size()) * 1000 + kPerTrace / 2);
        pid = it->second;
        if (fresh) {
          std::string process =
              "imported: " + tr.group + " (" + t.path +
              (t.OwnAxis() ? "; on its own axis, not aligned with this recording" : "") + ")";
          emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
               ",\"tid\":" + std::to_string(pid) + ",\"args\":{\"name\":" + Quote(process) + "}}");
        }
      }
      where[k] = {pid, tid};
      if (tr.kind != TraceTrackKind::kCounter) {
        emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
             ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + Quote(name) + "}}");
      }
    }
    const capture::TraceEvents& ev = t.events;
    auto ids = [&](size_t e) {
      const auto& [pid, tid] = where[ev.track[e]];
      return "\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
    };
    for (size_t e = 0; e < ev.size(); ++e) {
      std::string out;
      switch (ev.kind[e]) {
        case TraceEventKind::kSpan:
          out = "{\"ph\":\"X\",";
          break;
        case TraceEventKind::kInstant:
          out = "{\"ph\":\"i\",\"s\":\"t\",";
          break;
        case TraceEventKind::kCounter:
          out = "{\"ph\":\"C\",";
          break;
      }
      out += "\"cat\":" + Quote(ev.CategoryAt(e) == capture::kNone
                                    ? "imported"
                                    : "imported," + t.str(ev.CategoryAt(e)));
      out += ",\"name\":" + Quote(t.str(ev.name[e])) + "," + ids(e) + ",\"ts\":";
      AppendSince(out, ev.start[e], origin);
      if (ev.kind[e] == TraceEventKind::kSpan) {
        out += ",\"dur\":";
        AppendMicros(out, ev.duration[e]);
      }
      if (ev.kind[e] == TraceEventKind::kCounter) {
        out += ",\"args\":{\"value\":" + nlohmann::json(ev.ValueAt(e)).dump() + "}";
      } else if (ev.ArgsAt(e) != capture::kNone) {
        // The JSON text the import wrote, as it is; a capture made otherwise
        // may hold any text there: then it goes as a string.
        const std::string& args = t.str(ev.ArgsAt(e));
        const nlohmann::json parsed = nlohmann::json::parse(args, nullptr, false);
        out += ",\"args\":" + (parsed.is_object() ? args : "{\"text\":" + Quote(args) + "}");
      }
      emit(out + "}");
    }
    for (size_t f = 0; f < t.flows.size(); ++f) {
      const uint32_t from = t.flows.from[f], to = t.flows.to[f];
      const std::string id = std::to_string(flow_id++);
      const std::string name = Quote(t.str(t.flows.name[f]));
      std::string s = "{\"ph\":\"s\",\"cat\":\"imported\",\"name\":" + name + ",\"id\":" + id +
                      "," + ids(from) + ",\"ts\":";
      AppendSince(s, ev.start[from], origin);
      emit(s + "}");
      std::string e = "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"imported\",\"name\":" + name +
                      ",\"id\":" + id + "," + ids(to) + ",\"ts\":";
      AppendSince(e, ev.start[to], origin);
      emit(e + "}");
    }
  }
}

}  // namespace microscope::formats
