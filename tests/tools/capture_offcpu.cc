// Test tool: prints a capture's off-CPU intervals and short-interval counts
// as JSON lines, for the e2e tests:
//   {"kind":"interval","tid":..,"thread":"name","start":ns,"end":ns,
//    "state":"sleeping","flags":n,"waker_tid":n,"waker":"name",
//    "stack_end":"complete","stack":["innermost", ..., "outermost"]}
//   {"kind":"short","tid":..,"state":"..","count":n,"total":ns}
//   {"kind":"settings","off_cpu":"on","off_cpu_min":ns,"start":ns,"end":ns}
#include <cstdio>
#include <string>

#include "capture/reader.h"

using namespace microscope::capture;

namespace {

std::string Json(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capture_offcpu FILE\n");
    return 2;
  }
  auto c = ReadCapture(argv[1]);
  if (!c.ok()) {
    fprintf(stderr, "%s: %s\n", argv[1], c.status().message().c_str());
    return 1;
  }
  printf(
      "{\"kind\":\"settings\",\"off_cpu\":%s,\"off_cpu_min\":%llu,\"start\":%llu,\"end\":%llu}\n",
      Json(c->settings.SourceState("off-cpu")).c_str(),
      (unsigned long long)(c->settings.Source("off-cpu") != nullptr
                               ? c->settings.Source("off-cpu")->Value("min_ns")
                               : 0),
      (unsigned long long)c->settings.start_time, (unsigned long long)c->settings.end_time);
  auto frame_name = [&](FrameId f) {
    const Frame& fr = c->frames[f];
    if (fr.function != kNone) return c->str(c->functions[fr.function].name);
    char buf[48];
    snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)fr.address);
    return std::string(buf);
  };
  const OffCpu& o = c->off_cpu;
  for (size_t i = 0; i < o.size(); ++i) {
    const Thread& t = c->threads[o.thread[i]];
    std::string stack = "[";
    for (StackId n = o.stack[i]; n != kNone; n = c->stacks.parent[n]) {
      if (stack.size() > 1) stack += ",";
      stack += Json(frame_name(c->stacks.frame[n]));
    }
    stack += "]";
    printf(
        "{\"kind\":\"interval\",\"tid\":%d,\"thread\":%s,\"start\":%llu,\"end\":%llu,"
        "\"state\":\"%s\",\"flags\":%d,\"waker_tid\":%d,\"waker\":%s,\"stack_end\":\"%s\","
        "\"stack\":%s}\n",
        t.tid, Json(c->str(t.name)).c_str(), (unsigned long long)o.start[i],
        (unsigned long long)o.end[i], OffCpuStateName(o.state[i]), o.flags[i], o.waker_tid[i],
        Json(c->str(o.waker_name[i])).c_str(), StackEndName(o.stack_end[i]), stack.c_str());
  }
  const OffCpuShort& sh = c->off_cpu_short;
  for (size_t i = 0; i < sh.size(); ++i) {
    printf("{\"kind\":\"short\",\"tid\":%d,\"state\":\"%s\",\"count\":%llu,\"total\":%llu}\n",
           c->threads[sh.thread[i]].tid, OffCpuStateName(sh.state[i]),
           (unsigned long long)sh.count[i], (unsigned long long)sh.total[i]);
  }
  return 0;
}
