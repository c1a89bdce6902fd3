// Test and benchmark tool: prints each native frame of a capture with what
// symbolization gave it, one line per frame:
//   MODULE_PATH <TAB> OFFSET <TAB> VADDR <TAB> FUNC|FILE|LINE [<TAB> FUNC|FILE|LINE ...]
// offsets and addresses in hex (VADDR "-" when the module has no recorded
// segments), the source frames innermost first: the inlined calls found
// below the frame in the stack tree, then the frame itself. Unnamed parts
// are empty. Used to compare with eu-addr2line/addr2line -i -f.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "capture/reader.h"

using namespace microscope::capture;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capture_frames FILE\n");
    return 2;
  }
  auto c = ReadCapture(argv[1]);
  if (!c.ok()) {
    fprintf(stderr, "%s: %s\n", argv[1], c.status().message().c_str());
    return 1;
  }
  auto part = [&](const Frame& f) {
    std::string out = f.function == kNone ? "" : c->strings[c->functions[f.function].name];
    out += "|";
    if (f.file != kNone) out += c->strings[f.file];
    out += "|" + (f.line != 0 ? std::to_string(f.line) : std::string());
    return out;
  };
  // The inline chain under each native frame (any node holding it will do:
  // the chain depends on the address only).
  std::vector<std::vector<uint32_t>> children(c->stacks.size());
  for (uint32_t n = 0; n < c->stacks.size(); ++n) {
    if (c->stacks.parent[n] != kNone) children[c->stacks.parent[n]].push_back(n);
  }
  std::vector<uint32_t> node_of(c->frames.size(), kNone);
  for (uint32_t n = 0; n < c->stacks.size(); ++n) {
    if (node_of[c->stacks.frame[n]] == kNone) node_of[c->stacks.frame[n]] = n;
  }
  for (uint32_t f = 0; f < c->frames.size(); ++f) {
    const Frame& frame = c->frames[f];
    if (frame.kind != FrameKind::kNative || frame.module == kNone || node_of[f] == kNone) continue;
    const Module& m = c->modules[frame.module];
    std::string vaddr = "-";
    for (const Segment& s : m.segments) {
      if (frame.address >= (s.offset & ~uint64_t(0xfff)) && frame.address < s.offset + s.size) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%" PRIx64, frame.address - s.offset + s.vaddr);
        vaddr = buf;
        break;
      }
    }
    std::vector<std::string> chain{part(frame)};
    for (uint32_t n = node_of[f];;) {
      uint32_t next = kNone;
      for (uint32_t child : children[n]) {
        const Frame& cf = c->frames[c->stacks.frame[child]];
        if (cf.kind == FrameKind::kInline && cf.address == frame.address &&
            cf.module == frame.module) {
          next = child;
          break;
        }
      }
      if (next == kNone) break;
      chain.insert(chain.begin(), part(c->frames[c->stacks.frame[next]]));
      n = next;
    }
    printf("%s\t%" PRIx64 "\t%s", c->strings[m.path].c_str(), frame.address, vaddr.c_str());
    for (const std::string& s : chain) printf("\t%s", s.c_str());
    printf("\n");
  }
  return 0;
}
