// The unwinder over arbitrary registers and stack bytes, with real CFI (the
// fuzzer's own .eh_frame: thousands of rows, fast and general) for low
// addresses, frame-pointer code above 1 << 40, and nothing elsewhere.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "src/symbols/elf_handle.h"
#include "src/unwind/cfi_table.h"
#include "src/unwind/unwinder.h"

namespace {

using namespace microscope;

const unwind::CfiTable* OwnCfi() {
  static std::unique_ptr<unwind::CfiTable> table = [] {
    auto file = symbols::OpenElfFile("/proc/self/exe");
    if (!file.ok()) __builtin_trap();
    auto t = unwind::CfiTable::FromElf(file->elf.get());
    if (!t.ok()) __builtin_trap();
    return std::move(*t);
  }();
  return table.get();
}

struct Map : unwind::CodeMap {
  bool Lookup(uint64_t pc, unwind::CodeInfo* info) override {
    if (pc < (1ull << 32)) {
      info->table = OwnCfi();
      info->bias = 0;
      return true;
    }
    if (pc >= (1ull << 40) && pc < (1ull << 41)) {
      info->table = nullptr;
      info->frame_pointers = true;
      return true;
    }
    return false;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kRegs = unwind::kRegCount;
  if (size < kRegs * 8 + 8) return 0;
  unwind::Registers regs;
  for (size_t r = 0; r < kRegs; ++r) {
    uint64_t v;
    std::memcpy(&v, data + r * 8, 8);
    if (v != 0) regs.Set(int(r), v);
  }
  uint64_t base;
  std::memcpy(&base, data + kRegs * 8, 8);
  // The stack's base: near the stack pointer mostly, anywhere sometimes.
  if (regs.Has(unwind::kRegRsp) && (base & 1) == 0) base = regs.value[unwind::kRegRsp] & ~7ull;
  unwind::StackImage stack{base,
                           std::span<const uint8_t>(data + kRegs * 8 + 8, size - kRegs * 8 - 8)};
  Map map;
  std::vector<unwind::Frame> out(128);
  for (auto policy : {unwind::Policy::kDwarf, unwind::Policy::kAuto})
    (void)unwind::Unwind(regs, stack, map, policy, out);
  return 0;
}
