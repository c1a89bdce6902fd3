#include "src/unwind/unwinder.h"

#include <cstring>

namespace microscope::unwind {
namespace {

using capture::StackEnd;

// Reads from the copy, remembering why a read failed.
struct CopyReader {
  const StackImage& stack;
  bool below = false;  // an address under the copy's start
  bool above = false;  // an address past the copied bytes
  bool operator()(uint64_t address, uint64_t* value) {
    if (stack.Read(address, value)) return true;
    (address < stack.base ? below : above) = true;
    return false;
  }
  StackEnd Reason() const {
    return above ? StackEnd::kStackCopyExhausted : StackEnd::kCfaOutsideCopy;
  }
};

enum class Step { kOk, kDone, kFailed };

// The common x86-64 row, updated in place: only RSP, RBP and the return
// address survive a fast step (CFI of the caller says nothing of the rest).
Step StepFast(const CfiRow& row, Registers& regs, CopyReader& read, StackEnd* end) {
  if (!regs.Has(row.cfa_reg)) {
    *end = StackEnd::kUnsupportedCfi;
    return Step::kFailed;
  }
  uint64_t cfa = regs.value[row.cfa_reg] + int64_t(row.cfa_offset);
  if (row.flags & CfiRow::kRaUndefined) return Step::kDone;
  uint64_t ra;
  if (!read(cfa + int64_t(row.ra_offset), &ra)) {
    *end = read.Reason();
    return Step::kFailed;
  }
  uint64_t rbp = regs.value[kRegRbp];
  bool has_rbp = regs.Has(kRegRbp);
  if (row.flags & CfiRow::kRbpSaved) {
    if (!read(cfa + int64_t(row.rbp_offset), &rbp)) {
      *end = read.Reason();
      return Step::kFailed;
    }
    has_rbp = true;
  } else if (row.flags & CfiRow::kRbpUndefined) {
    has_rbp = false;
  }
  regs.valid = (1u << kRegRsp) | (1u << kRegRa) | (has_rbp ? 1u << kRegRbp : 0u);
  regs.value[kRegRsp] = cfa;
  regs.value[kRegRa] = ra;
  regs.value[kRegRbp] = rbp;
  return Step::kOk;
}

Step StepGeneral(const CfiTable& table, const CfiRow& row, Registers& regs, CopyReader& read,
                 StackEnd* end) {
  const GeneralRow& g = table.general(row.general);
  ReadWord reader = [&](uint64_t a, uint64_t* v) { return read(a, v); };
  ExprResult r;
  if (g.cfa_len == 0 ||
      !EvaluateExpr(table.expr(g.cfa_begin, g.cfa_len), regs, false, 0, reader, &r)) {
    *end = read.below || read.above ? read.Reason() : StackEnd::kUnsupportedCfi;
    return Step::kFailed;
  }
  uint64_t cfa = r.value;
  if (g.regs[kRegRa].kind == RuleKind::kUndefined) return Step::kDone;
  Registers next;
  for (int reg = 0; reg < kRegCount; ++reg) {
    const RegRule& rule = g.regs[reg];
    if (rule.kind == RuleKind::kSame) {
      if (regs.Has(reg)) next.Set(reg, regs.value[reg]);
    } else if (rule.kind == RuleKind::kExpr) {
      if (!EvaluateExpr(table.expr(rule.expr_begin, rule.expr_len), regs, true, cfa, reader, &r)) {
        if (reg == kRegRa) {
          *end = read.below || read.above ? read.Reason() : StackEnd::kUnsupportedCfi;
          return Step::kFailed;
        }
        continue;  // an unrecoverable other register stays unknown
      }
      uint64_t v = r.value;
      if (!r.is_value && !read(r.value, &v)) {
        if (reg == kRegRa) {
          *end = read.Reason();
          return Step::kFailed;
        }
        continue;
      }
      next.Set(reg, v);
    }
  }
  if (!next.Has(kRegRsp)) next.Set(kRegRsp, cfa);
  regs = next;
  return Step::kOk;
}

// The frame-pointer step: [rbp] is the caller's rbp, [rbp+8] the return address.
Step StepFramePointer(Registers& regs, CopyReader& read, StackEnd* end) {
  if (!regs.Has(kRegRbp) || regs.value[kRegRbp] == 0) {
    *end = StackEnd::kFramePointerEnd;
    return Step::kFailed;
  }
  uint64_t bp = regs.value[kRegRbp];
  uint64_t next_bp, ra;
  if (!read(bp, &next_bp) || !read(bp + 8, &ra)) {
    *end = read.above ? StackEnd::kStackCopyExhausted : StackEnd::kFramePointerEnd;
    return Step::kFailed;
  }
  Registers next;
  next.Set(kRegRbp, next_bp);
  next.Set(kRegRsp, bp + 16);
  next.Set(kRegRa, ra);
  regs = next;
  return Step::kOk;
}

}  // namespace

UnwindResult Unwind(const Registers& initial, const StackImage& stack, CodeMap& code, Policy policy,
                    std::span<Frame> out) {
  UnwindResult result;
  Registers regs = initial;
  if (!regs.Has(kRegRa) || !regs.Has(kRegRsp)) {
    result.end = StackEnd::kEmpty;
    return result;
  }
  bool exact = true;
  for (;;) {
    uint64_t pc = regs.value[kRegRa];
    CodeInfo info;
    if (!code.Lookup(pc, &info)) {
      // The leaf is in no mapping: JIT code or a stale map. A caller's
      // return address in no mapping is a bad step, not a frame.
      result.end = result.frames == 0 ? StackEnd::kUnmappedPc : StackEnd::kBadReturnAddress;
      return result;
    }
    if (result.frames == out.size()) {
      result.end = StackEnd::kMaxDepth;
      return result;
    }
    out[result.frames++] = {pc, exact};
    // A return address points after the call; look up the call itself.
    uint64_t lookup = (exact ? pc : pc - 1) - info.bias;
    const CfiRow* row = info.table != nullptr ? info.table->Find(lookup) : nullptr;
    uint64_t sp = regs.value[kRegRsp];
    CopyReader read{stack};
    StackEnd end = StackEnd::kComplete;
    Step step;
    bool signal = false;
    if (row != nullptr) {
      signal = (row->flags & CfiRow::kSignal) != 0;
      // The return address into a signal trampoline is its first
      // instruction, not a call site: name the frame by the exact pc.
      if (signal) out[result.frames - 1].exact = true;
      step = (row->flags & CfiRow::kGeneral) ? StepGeneral(*info.table, *row, regs, read, &end)
                                             : StepFast(*row, regs, read, &end);
    } else if (policy == Policy::kAuto && (info.table == nullptr || !info.table->has_cfi())) {
      step = StepFramePointer(regs, read, &end);
    } else {
      result.end = StackEnd::kNoUnwindInfo;
      return result;
    }
    if (step == Step::kDone) {
      result.end = StackEnd::kComplete;
      return result;
    }
    if (step == Step::kFailed) {
      result.end = end;
      return result;
    }
    // The stack grows down: every caller's frame lies above its callee's.
    if (regs.value[kRegRsp] <= sp && !signal) {
      result.end = StackEnd::kCfaOutsideCopy;
      return result;
    }
    if (regs.value[kRegRa] == 0) {
      result.end = StackEnd::kComplete;  // a zeroed return address ends the chain by convention
      return result;
    }
    exact = signal;
  }
}

}  // namespace microscope::unwind
