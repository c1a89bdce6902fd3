#include "formats/chrome.h"

#include "formats/chrome_probes.h"
#include "formats/chrome_text.h"
#include "formats/chrome_traces.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace microscope::formats {
namespace {

using capture::kNone;

void AppendNumber(std::string& out, uint64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

// The innermost frame of a stack that is not the kernel's: where the
// program blocked.
std::string TopUserFrame(const capture::Capture& c, const analysis::FunctionKeys& keys,
                         capture::StackId stack) {
  for (uint32_t n = stack; n != kNone; n = c.stacks.parent[n]) {
    if (c.frames[c.stacks.frame[n]].kind != capture::FrameKind::kKernel) {
      return keys.Name(keys.KeyOf(c.stacks.frame[n]));
    }
  }
  return "";
}

// One off-CPU interval as a complete event named by its state.
std::string BlockedSpan(const capture::Capture& c, const analysis::FunctionKeys& keys, uint32_t k,
                        const std::string& ids, uint64_t ts, uint64_t dur) {
  const capture::OffCpu& o = c.off_cpu;
  const char* state = capture::OffCpuStateName(o.state[k]);
  std::string e = "{\"ph\":\"X\",\"cat\":\"off-cpu\",\"name\":\"off-CPU (";
  e += state;
  e += ")\"," + ids + ",\"ts\":";
  AppendMicros(e, ts);
  e += ",\"dur\":";
  AppendMicros(e, dur);
  e += ",\"args\":{\"state\":\"";
  e += state;
  e += "\",\"waker\":";
  e += o.waker_tid[k] == 0
           ? "\"unknown\""
           : Quote(c.str(o.waker_name[k]) + " (" + std::to_string(o.waker_tid[k]) + ")");
  std::string incomplete;
  if (o.flags[k] & capture::kOffCpuCutAtStart) incomplete = "off CPU before the recording began";
  if (o.flags[k] & capture::kOffCpuCutAtEnd) {
    incomplete +=
        std::string(incomplete.empty() ? "" : "; ") + "still off CPU at the end, or switch-in lost";
  }
  if (!incomplete.empty()) e += ",\"incomplete\":" + Quote(incomplete);
  if (o.flags[k] & capture::kOffCpuNoUserStack) e += ",\"no_user_stack\":true";
  std::string top = TopUserFrame(c, keys, o.stack[k]);
  if (!top.empty()) e += ",\"user_frame\":" + Quote(top);
  e += "}}";
  return e;
}

// Each gap as a labelled span ("gap: lost records"): in its thread or
// process when it has one, else in a process of its own named so (pid 0,
// one thread per CPU, thread 0 for gaps of no one CPU). Never left blank,
// which a reader would take for idle time.
void AppendGapEvents(const capture::Capture& c, uint64_t origin,
                     const std::function<void(const std::string&)>& emit) {
  bool named = false;
  for (const capture::Gap& g : c.gaps) {
    if (g.end < origin) continue;
    int64_t pid = g.pid, tid = g.tid != 0 ? g.tid : g.pid;
    if (g.pid == 0) {
      tid = g.cpu >= 0 ? g.cpu + 1 : 0;
      if (!named) {
        named = true;
        emit(R"js({"ph":"M","name":"process_name","pid":0,"tid":0,)js"
             R"js("args":{"name":"microscope: gaps of every process (not known, not idle)"}})js");
      }
    }
    const std::string cause(capture::GapCauseName(g.cause));
    std::string e = "{\"ph\":\"X\",\"cat\":\"gap\",\"name\":\"gap: " + cause +
                    "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
                    ",\"ts\":";
    const uint64_t begin = std::max(g.begin, origin);
    AppendMicros(e, begin - origin);
    e += ",\"dur\":";
    AppendMicros(e, g.end - begin);
    e += ",\"args\":{\"cause\":\"" + cause + "\",\"count\":" + std::to_string(g.count);
    if (g.cpu >= 0) e += ",\"cpu\":" + std::to_string(g.cpu);
    e += "}}";
    emit(e);
  }
}

}  // namespace

void WriteChromeTrace(FILE* file, const capture::Capture& c, const analysis::FunctionKeys& keys,
                      const analysis::SampleFilter& filter, analysis::Cancel cancel) {
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
  AppendProbeEvents(c, filter, emit);
  AppendImportedTraceEvents(c, emit);
  AppendGapEvents(c, origin, emit);
  // Samples of each thread, in time order (the capture's order).
  std::vector<std::vector<uint32_t>> by_thread(c.threads.size());
  std::vector<bool> node_used(c.stacks.size());
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (cancel.At(i)) return;
    if (!filter.Keep(c, i)) continue;
    by_thread[c.samples.thread[i]].push_back(uint32_t(i));
    for (uint32_t n = c.samples.stack[i]; n != kNone && !node_used[n]; n = c.stacks.parent[n]) {
      node_used[n] = true;
    }
  }
  // Off-CPU intervals of each thread, in start order (the capture's order).
  const capture::OffCpu& off = c.off_cpu;
  std::vector<std::vector<uint32_t>> off_by_thread(c.threads.size());
  for (size_t i = 0; i < off.size(); ++i) {
    if (filter.Keep(off.thread[i], off.start[i], off.stack[i])) {
      off_by_thread[off.thread[i]].push_back(uint32_t(i));
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
    const auto& blocked = off_by_thread[t];
    if (samples.empty() && blocked.empty()) continue;
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
    uint64_t closed_at = 0;  // the end of the last slice written
    size_t next_blocked = 0;
    // Closes the slices open before an off-CPU interval and writes it as a
    // span of its own; slices after it start at its end.
    auto emit_blocked_to = [&](uint64_t time) {
      for (; next_blocked < blocked.size() && off.start[blocked[next_blocked]] <= time;
           ++next_blocked) {
        uint32_t k = blocked[next_blocked];
        uint64_t start = std::max(off.start[k], origin);
        if (!open.empty()) {
          // Slices end where the interval starts (or where the last began:
          // never a negative duration).
          closed_at = std::max(std::min(last_end, start), open.back().start);
          close_to(0, closed_at);
        }
        start = std::max(start, closed_at);
        uint64_t end = std::max(off.end[k], start);
        out += first ? "" : ",\n";
        first = false;
        out += BlockedSpan(c, keys, k, ids, start - origin, end - start);
        flush(false);
        last_end = std::max(last_end, end);
      }
    };
    for (uint32_t i : samples) {
      if (cancel.At(i)) return;
      uint64_t time = std::max(c.samples.time[i], origin);
      emit_blocked_to(c.samples.time[i]);
      uint64_t period =
          c.settings.unit == "nanoseconds" ? std::max<uint64_t>(c.samples.weight[i], 1) : 1000;
      // A gap longer than a period closes everything: the thread was not running.
      if (!open.empty() && time > last_end + period) {
        close_to(0, last_end);
        closed_at = last_end;
      }
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
    emit_blocked_to(UINT64_MAX);
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
