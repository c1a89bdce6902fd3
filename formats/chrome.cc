#include "formats/chrome.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <vector>

namespace microscope::formats {
namespace {

using capture::kNone;

std::string Quote(const std::string& s) {
  // Names may hold invalid UTF-8 (a comm cut mid-character): replace, never throw.
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Appends ns as microseconds with three decimals, without floating point.
void AppendMicros(std::string& out, uint64_t ns) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof(buf), ns / 1000).ptr;
  out.append(buf, end);
  unsigned frac = unsigned(ns % 1000);
  out += '.';
  out += char('0' + frac / 100);
  out += char('0' + frac / 10 % 10);
  out += char('0' + frac % 10);
}

void AppendNumber(std::string& out, uint64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

}  // namespace

void WriteChromeTrace(FILE* file, const capture::Capture& c, const analysis::FunctionKeys& keys,
                      const analysis::SampleFilter& filter) {
  // Streamed: memory stays bounded by the deepest stack, not the output.
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  auto flush = [&](bool force) {
    if (force || out.size() > (1 << 20)) {
      fwrite(out.data(), 1, out.size(), file);
      out.clear();
    }
  };
  bool first = true;
  auto emit = [&](const std::string& event) {
    out += first ? "" : ",\n";
    out += event;
    first = false;
    flush(false);
  };
  const uint64_t origin = c.settings.start_time;
  std::map<int32_t, bool> named_process;
  for (const capture::Thread& t : c.threads) {
    int32_t pid = c.processes[t.process].pid;
    if (!named_process[pid]) {
      named_process[pid] = true;
      emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(pid) +
           ",\"args\":{\"name\":" + Quote(c.str(c.processes[t.process].command)) + "}}");
    }
    emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
         std::to_string(t.tid) + ",\"args\":{\"name\":" + Quote(c.str(t.name)) + "}}");
  }
  // Samples of each thread, in time order (the capture's order).
  std::vector<std::vector<uint32_t>> by_thread(c.threads.size());
  std::vector<bool> node_used(c.stacks.size());
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (!filter.Keep(c, i)) continue;
    by_thread[c.samples.thread[i]].push_back(uint32_t(i));
    for (uint32_t n = c.samples.stack[i]; n != kNone && !node_used[n]; n = c.stacks.parent[n]) {
      node_used[n] = true;
    }
  }
  std::vector<std::string> quoted(keys.size());
  auto name = [&](analysis::KeyId k) -> const std::string& {
    if (quoted[k].empty()) quoted[k] = Quote(keys.Name(k));
    return quoted[k];
  };
  // Flame-chart slices: each run of adjacent samples sharing a frame at the
  // same depth is one complete event, emitted as it closes (viewers sort).
  for (size_t t = 0; t < c.threads.size(); ++t) {
    const auto& samples = by_thread[t];
    if (samples.empty()) continue;
    const std::string ids = "\"pid\":" + std::to_string(c.processes[c.threads[t].process].pid) +
                            ",\"tid\":" + std::to_string(c.threads[t].tid);
    struct Open {
      analysis::KeyId key;
      uint64_t start;
    };
    std::vector<Open> open;
    std::vector<analysis::KeyId> path;
    auto close_to = [&](size_t depth, uint64_t end) {
      while (open.size() > depth) {
        const Open& o = open.back();
        // The hot loop of this writer: appended in place, no temporaries.
        out += first ? "{\"ph\":\"X\",\"name\":" : ",\n{\"ph\":\"X\",\"name\":";
        first = false;
        out += name(o.key);
        out += ',';
        out += ids;
        out += ",\"ts\":";
        AppendMicros(out, o.start - origin);
        out += ",\"dur\":";
        AppendMicros(out, end - o.start);
        out += '}';
        flush(false);
        open.pop_back();
      }
    };
    uint64_t last_end = 0;
    for (uint32_t i : samples) {
      uint64_t time = std::max(c.samples.time[i], origin);
      uint64_t period =
          c.settings.unit == "nanoseconds" ? std::max<uint64_t>(c.samples.weight[i], 1) : 1000;
      // A gap longer than a period closes everything: the thread was not running.
      if (!open.empty() && time > last_end + period) close_to(0, last_end);
      path.clear();
      for (uint32_t n = c.samples.stack[i]; n != kNone; n = c.stacks.parent[n]) {
        path.push_back(keys.KeyOf(c.stacks.frame[n]));
      }
      std::reverse(path.begin(), path.end());
      uint64_t at = std::max(time, last_end);
      size_t common = 0;
      while (common < open.size() && common < path.size() && open[common].key == path[common])
        ++common;
      close_to(common, at);
      for (size_t d = common; d < path.size(); ++d) open.push_back({path[d], at});
      last_end = at + period;
    }
    close_to(0, last_end);
  }
  out += "\n],\"stackFrames\":{";
  // The samples themselves, for viewers that read Chrome's sampling format:
  // each stack node is a frame whose parent is its caller's node.
  bool first_frame = true;
  for (uint32_t n = 0; n < c.stacks.size(); ++n) {
    if (!node_used[n]) continue;
    analysis::KeyId k = keys.KeyOf(c.stacks.frame[n]);
    out += first_frame ? "\n" : ",\n";
    first_frame = false;
    out += "\"" + std::to_string(n) + "\":{\"name\":" + name(k) +
           ",\"category\":" + Quote(keys.ModuleName(k));
    if (c.stacks.parent[n] != kNone)
      out += ",\"parent\":\"" + std::to_string(c.stacks.parent[n]) + "\"";
    out += "}";
  }
  out += "\n},\"samples\":[";
  bool first_sample = true;
  const std::string metric = Quote(c.settings.metric);
  std::vector<std::string> ids_of(c.threads.size());
  for (size_t t = 0; t < c.threads.size(); ++t) {
    ids_of[t] = "\"pid\":" + std::to_string(c.processes[c.threads[t].process].pid) +
                ",\"tid\":" + std::to_string(c.threads[t].tid);
  }
  for (size_t t = 0; t < c.threads.size(); ++t) {
    for (uint32_t i : by_thread[t]) {
      if (c.samples.stack[i] == kNone) continue;
      out += first_sample ? "\n" : ",\n";
      first_sample = false;
      out += "{\"cpu\":0,";
      out += ids_of[t];
      out += ",\"ts\":";
      AppendMicros(out, std::max(c.samples.time[i], origin) - origin);
      out += ",\"name\":";
      out += metric;
      out += ",\"sf\":\"";
      AppendNumber(out, c.samples.stack[i]);
      out += "\",\"weight\":";
      AppendNumber(out, c.samples.CountAt(i));
      out += '}';
      flush(false);
    }
  }
  out += "\n]}\n";
  flush(true);
}

}  // namespace microscope::formats
