// Test tool: prints each sample's user stack from a capture, one line per
// sample: "LEAF_FUNCTION<TAB>CALLER_ADDRESSES<TAB>STACK_END" with the
// callers' addresses (module offsets, caller frames at return address - 1)
// leaf to root, comma separated, and why the stack ends (StackEndName).
// Kernel and inline frames are left out. Used to compare with perf script
// --no-inline.
#include <cstdio>

#include "capture/reader.h"

using namespace microscope::capture;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capture_stacks FILE\n");
    return 2;
  }
  auto c = ReadCapture(argv[1]);
  if (!c.ok()) {
    fprintf(stderr, "%s: %s\n", argv[1], c.status().message().c_str());
    return 1;
  }
  for (size_t i = 0; i < c->samples.size(); ++i) {
    std::string leaf;
    std::string callers;
    bool first = true;
    for (uint32_t n = c->samples.stack[i]; n != kNone; n = c->stacks.parent[n]) {
      const Frame& f = c->frames[c->stacks.frame[n]];
      // Kernel frames and inline frames (perf script --no-inline's view).
      if (f.kind == FrameKind::kKernel || f.kind == FrameKind::kInline) continue;
      if (first) {
        leaf = f.function == kNone ? "?" : c->str(c->functions[f.function].name);
        first = false;
        continue;
      }
      char buf[32];
      snprintf(buf, sizeof(buf), "%s%llx", callers.empty() ? "" : ",",
               static_cast<unsigned long long>(f.address));
      callers += buf;
    }
    if (!first)
      printf("%s\t%s\t%s\n", leaf.c_str(), callers.c_str(), StackEndName(c->samples.end[i]));
  }
  return 0;
}
