#include "src/runtimes/jit/entry_code.h"

#include <cstring>
#include <vector>

namespace microscope::runtimes::jit {
namespace {

constexpr size_t kMaxInstructions = 64;

// The frame's state before an instruction: the CFA (the stack pointer
// before the call that entered the code) is rsp + rsp_offset, or
// rbp + rbp_offset once rbp holds a copy of rsp; the caller's rbp is in
// rbp (not saved) or at CFA + rbp_slot.
struct State {
  int32_t rsp_offset = 8;
  bool cfa_on_rbp = false;
  int32_t rbp_offset = 0;
  bool rbp_saved = false;
  int16_t rbp_slot = 0;
};

unwind::CfiRow RowOf(const State& s, uint64_t start, uint32_t length) {
  unwind::CfiRow row{};
  row.start = start;
  row.length = length;
  row.general = 0xFFFFFFFFu;
  row.cfa_reg = uint8_t(s.cfa_on_rbp ? unwind::kRegRbp : unwind::kRegRsp);
  row.cfa_offset = s.cfa_on_rbp ? s.rbp_offset : s.rsp_offset;
  row.ra_offset = -8;
  if (s.rbp_saved) {
    row.flags |= unwind::CfiRow::kRbpSaved;
    row.rbp_offset = s.rbp_slot;
  }
  return row;
}

bool Starts(std::span<const uint8_t> code, size_t at, std::initializer_list<uint8_t> bytes) {
  if (code.size() - at < bytes.size()) return false;
  return std::memcmp(code.data() + at, bytes.begin(), bytes.size()) == 0;
}

// What the instruction at `at` does to `s`: its length, 0 when it is not
// one whose effect is known; `last` when nothing falls through it (ret).
size_t Step(std::span<const uint8_t> code, size_t at, State* s, bool* last) {
  const size_t left = code.size() - at;
  const uint8_t* p = code.data() + at;
  if (Starts(code, at, {0xf3, 0x0f, 0x1e, 0xfa})) return 4;  // endbr64
  if (p[0] == 0x90) return 1;                                // nop
  if (Starts(code, at, {0x66, 0x90})) return 2;
  if (p[0] == 0x55) {  // push %rbp
    s->rsp_offset += 8;
    if (!s->rbp_saved) {
      s->rbp_saved = true;
      s->rbp_slot = int16_t(-s->rsp_offset);
    }
    return 1;
  }
  if (Starts(code, at, {0x48, 0x89, 0xe5})) {  // mov %rsp,%rbp
    if (!s->rbp_saved) return 0;               // the caller's rbp would be lost
    s->cfa_on_rbp = true;
    s->rbp_offset = s->rsp_offset;
    return 3;
  }
  if (p[0] == 0x5d) {  // pop %rbp: the caller's again
    if (!s->rbp_saved || s->rbp_slot != -s->rsp_offset) return 0;
    s->rsp_offset -= 8;
    s->cfa_on_rbp = false;
    s->rbp_saved = false;
    return 1;
  }
  // sub/add $imm8 or $imm32, %rsp
  if (left >= 4 && p[0] == 0x48 && p[1] == 0x83 && (p[2] == 0xec || p[2] == 0xc4)) {
    const int32_t imm = int8_t(p[3]);
    s->rsp_offset += p[2] == 0xec ? imm : -imm;
    return s->rsp_offset >= 8 && s->rsp_offset < (1 << 15) ? 4 : 0;
  }
  if (left >= 7 && p[0] == 0x48 && p[1] == 0x81 && (p[2] == 0xec || p[2] == 0xc4)) {
    int32_t imm;
    std::memcpy(&imm, p + 3, 4);
    if (imm < 0 || imm >= (1 << 15)) return 0;
    s->rsp_offset += p[2] == 0xec ? imm : -imm;
    return s->rsp_offset >= 8 && s->rsp_offset < (1 << 15) ? 7 : 0;
  }
  // Calls return to the next instruction with the stack as it was.
  if (left >= 2 && p[0] == 0xff && (p[1] & 0xf8) == 0xd0) return 2;  // call *%reg
  if (left >= 3 && p[0] == 0x41 && p[1] == 0xff && (p[2] & 0xf8) == 0xd0) return 3;
  if (left >= 5 && p[0] == 0xe8) return 5;  // call rel32
  if (p[0] == 0xc3) {                       // ret: the CFA must be right above
    if (s->cfa_on_rbp || s->rsp_offset != 8) return 0;
    *last = true;
    return 1;
  }
  return 0;
}

}  // namespace

std::unique_ptr<unwind::CfiTable> ProveEntryCode(std::span<const uint8_t> code, uint64_t address) {
  std::vector<unwind::CfiRow> rows;
  State s;
  size_t at = 0;
  for (size_t n = 0; n < kMaxInstructions && at < code.size(); ++n) {
    const State before = s;
    bool last = false;
    const size_t length = Step(code, at, &s, &last);
    if (length == 0) break;
    rows.push_back(RowOf(before, address + at, uint32_t(length)));
    at += length;
    if (last) break;
  }
  if (rows.empty()) return nullptr;
  return unwind::CfiTable::FromRows(std::move(rows), {}, {}, "proven from the code");
}

}  // namespace microscope::runtimes::jit
