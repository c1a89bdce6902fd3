// Benchmark input for `microscope symbolize`: a capture whose frames are the
// given addresses, as a recording would store them (module by path, build
// ID and PT_LOAD segments; frame = file offset; unnamed).
//   make_symbolize_capture OUT.mscap < "MODULE_PATH VADDR_HEX" lines
// One sample per address, each its own one-frame stack.
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "capture/writer.h"
#include "formats/capture_builder.h"
#include "src/symbols/elf_image.h"

using namespace microscope;

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: make_symbolize_capture OUT.mscap < 'PATH VADDR' lines\n");
    return 2;
  }
  formats::CaptureBuilder b;
  std::map<std::string, std::pair<capture::ModuleId, symbols::ElfLayout>> modules;
  capture::ThreadId thread = b.Thread(1, 1, "bench");
  std::string path, hex;
  uint64_t n = 0, skipped = 0;
  while (std::cin >> path >> hex) {
    auto it = modules.find(path);
    if (it == modules.end()) {
      auto layout = symbols::ReadElfLayout(path);
      if (!layout.ok()) {
        fprintf(stderr, "%s: %s\n", path.c_str(), layout.status().message().c_str());
        return 1;
      }
      capture::ModuleId m = b.Module(path, layout->build_id);
      for (const auto& l : layout->loads) {
        b.capture().modules[m].segments.push_back({l.offset, l.vaddr, l.filesz});
      }
      it = modules.emplace(path, std::make_pair(m, std::move(layout).value())).first;
    }
    uint64_t vaddr = std::stoull(hex, nullptr, 16);
    bool found = false;
    for (const auto& l : it->second.second.loads) {
      if (vaddr >= l.vaddr && vaddr < l.vaddr + l.filesz) {
        capture::FrameId f = b.Frame(capture::FrameKind::kNative, it->second.first,
                                     vaddr - l.vaddr + l.offset, capture::kNone);
        b.Sample(n * 1000, thread, b.Stack({f}), 1000, 1);
        found = true;
        break;
      }
    }
    ++n;
    skipped += !found;
  }
  b.capture().settings.symbols = "later";
  Status st = capture::WriteCapture(b.capture(), argv[1]);
  if (!st.ok()) {
    fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  fprintf(stderr, "%" PRIu64 " addresses (%" PRIu64 " outside any segment), %zu modules\n", n,
          skipped, modules.size());
  return 0;
}
