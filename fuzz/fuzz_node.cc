// The V8 readers: the BPF walk record, bytecode source position tables (both
// encodings), functions, strings and scope infos, and optimized code
// (found below a pc, its positions and inlined calls) read from a target's
// heap (here the input) with the layout of the node this machine has, and
// source maps (the JSON, its data: URL, the comment naming it).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "fuzz/memory.h"
#include "src/runtimes/node/code_reader.h"
#include "src/runtimes/node/function_reader.h"
#include "src/runtimes/node/heap_reader.h"
#include "src/runtimes/node/layout.h"
#include "src/runtimes/node/line_table.h"
#include "src/runtimes/node/source_map.h"
#include "src/runtimes/node/walk.h"

namespace {

using namespace microscope;
using namespace microscope::runtimes::node;

const V8Layout* Node() {
  static const std::optional<V8Layout> layout = []() -> std::optional<V8Layout> {
    auto l = V8LayoutFromElfFile("/usr/bin/node");
    if (!l.ok()) return std::nullopt;
    return *l;
  }();
  return layout ? &*layout : nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::span<const uint8_t> bytes(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      (void)ParseV8Walk(bytes);
      break;
    case 1:
      if (auto e = DecodePositionTable(bytes, (data[0] & 8) != 0); e.ok()) {
        for (int64_t at = -1; at < 64; at += 5) (void)PositionAt(*e, at);
      }
      break;
    case 2: {
      const V8Layout* layout = Node();
      if (layout == nullptr) break;
      fuzz::InputMemory memory(bytes);
      HeapReader heap(&memory, layout);
      // Tagged pointers into the input (V8's heap object tag is 1).
      const uint64_t shared = memory.Pointer(0) | 1, name = memory.Pointer(4) | 1,
                     script = memory.Pointer(8) | 1;
      (void)ReadFunction(heap, *layout, shared, name, script);
      (void)heap.ReadString(name);
      if (auto units = heap.ReadCodeUnits(script, 1 << 16); units.ok()) {
        SourceLines lines(*units);
        (void)lines.LineOf(17);
      }
      // Optimized code found below a pc (a page of the input, at least
      // 4 KiB), its position table, inlined calls and their functions.
      const uint64_t pc = memory.Pointer(12);
      if (auto code = ReadCompiledCode(memory, *layout, pc, 1 << 16); code.ok()) {
        std::vector<InlinedAt> chain;
        (void)FunctionsAt(*code, pc, (data[0] & 8) != 0, &chain);
      }
      break;
    }
    case 3: {
      const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      if (auto map = SourceMap::Parse(text, "fuzz.map", "/base"); map.ok()) {
        for (uint32_t line = 0; line < 4; ++line) (void)map->Find(line, line * 7);
      }
      (void)DecodeDataUrl(text, 1 << 16);
      (void)SourceMappingUrl(std::u16string(text.begin(), text.end()));
      (void)ResolvePath("/base/dir", text);
      break;
    }
  }
  return 0;
}
