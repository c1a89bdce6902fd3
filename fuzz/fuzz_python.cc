// The CPython readers: the BPF walk record, co_linetable, _Py_DebugOffsets,
// and the code objects, strings, thread lists and frame chains read from a
// target's memory (here the input), with the layout of Debian's 3.11 and of
// the 3.13+ debug offsets the input carries; thread names (threading's) too.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "fuzz/memory.h"
#include "src/runtimes/python/code_reader.h"
#include "src/runtimes/python/layout.h"
#include "src/runtimes/python/line_table.h"
#include "src/runtimes/python/thread_names.h"
#include "src/runtimes/python/walk.h"

namespace {

using namespace microscope;
using namespace microscope::runtimes::python;

const Layout& Python311() {
  static const Layout layout = [] {
    auto l = Layout311(0x030b02f0);
    if (!l.ok()) __builtin_trap();
    return *l;
  }();
  return layout;
}

void ReadMemory(fuzz::InputMemory& memory, const Layout& layout) {
  InterpreterAddresses at{memory.Pointer(0),  memory.Pointer(4),  memory.Pointer(8),
                          memory.Pointer(12), memory.Pointer(24), memory.Pointer(28),
                          memory.Pointer(32)};
  (void)ListThreads(memory, layout, at, 64);
  ThreadNamesCache cache;
  (void)ReadThreadNames(memory, layout, at, &cache);
  (void)ReadFrameCodes(memory, layout, memory.Pointer(16), 64);
  (void)ReadCode(memory, layout, at, memory.Pointer(20));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      (void)ParseWalk(bytes);
      break;
    case 1:
      for (uint32_t unit = 0; unit < 64; unit += 7) (void)LineOfInstruction(bytes, 10, unit);
      break;
    case 2: {
      fuzz::InputMemory memory(bytes);
      ReadMemory(memory, Python311());
      break;
    }
    case 3:
      if (auto layout = LayoutFromDebugOffsets(bytes); layout.ok()) {
        fuzz::InputMemory memory(bytes);
        ReadMemory(memory, *layout);
      }
      break;
  }
  return 0;
}
