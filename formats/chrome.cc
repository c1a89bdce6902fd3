#include "formats/chrome.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

namespace microscope::formats {
namespace {

using capture::kNone;

std::string Quote(const std::string& s) { return nlohmann::json(s).dump(); }

std::string Micros(uint64_t ns) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.3f", double(ns) / 1000.0);
  return buf;
}

}  // namespace

std::string WriteChromeTrace(const capture::Capture& c, const analysis::FunctionKeys& keys,
                             const analysis::SampleFilter& filter) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& event) {
    out += first ? "" : ",\n";
    out += event;
    first = false;
  };
  const uint64_t origin = c.settings.start_time;
  std::map<int32_t, bool> named_process;
  for (const capture::Thread& t : c.threads) {
    int32_t pid = c.processes[t.process].pid;
    if (!named_process[pid]) {
      named_process[pid] = true;
      emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) +
           ",\"tid\":" + std::to_string(pid) + ",\"args\":{\"name\":" +
           Quote(c.str(c.processes[t.process].command)) + "}}");
    }
    emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(t.tid) + ",\"args\":{\"name\":" + Quote(c.str(t.name)) + "}}");
  }
  // Samples of each thread, in time order (the capture's order).
  std::vector<std::vector<uint32_t>> by_thread(c.threads.size());
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (filter.Keep(c, i)) by_thread[c.samples.thread[i]].push_back(uint32_t(i));
  }
  std::vector<std::string> quoted(keys.size());
  auto name = [&](analysis::KeyId k) -> const std::string& {
    if (quoted[k].empty()) quoted[k] = Quote(keys.Name(k));
    return quoted[k];
  };
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
        emit("{\"ph\":\"X\",\"name\":" + name(o.key) + "," + ids + ",\"ts\":" +
             Micros(o.start - origin) + ",\"dur\":" + Micros(end - o.start) + "}");
        open.pop_back();
      }
    };
    uint64_t last_end = 0;
    for (uint32_t i : samples) {
      uint64_t time = std::max(c.samples.time[i], origin);
      uint64_t period = std::max<uint64_t>(c.samples.weight[i], 1);
      // A gap longer than two periods closes everything: the thread was off CPU.
      if (!open.empty() && time > last_end + period) close_to(0, last_end);
      path.clear();
      for (uint32_t n = c.samples.stack[i]; n != kNone; n = c.stacks.parent[n]) {
        path.push_back(keys.KeyOf(c.stacks.frame[n]));
      }
      std::reverse(path.begin(), path.end());
      size_t common = 0;
      while (common < open.size() && common < path.size() && open[common].key == path[common]) ++common;
      close_to(common, std::max(time, last_end));
      for (size_t d = common; d < path.size(); ++d) open.push_back({path[d], std::max(time, last_end)});
      last_end = std::max(time, last_end) + (c.settings.unit == "nanoseconds" ? period : 1000);
    }
    close_to(0, last_end);
  }
  out += "\n]}\n";
  return out;
}

}  // namespace microscope::formats
