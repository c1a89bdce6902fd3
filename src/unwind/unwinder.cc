#include "src/unwind/unwinder.h"

#include <dwarf.h>

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

// Registers left unknown because their save slot lay outside the copy (a
// bit per register, by the side it missed): a later CFA that needs one of
// them ends with the copy's reason, not unsupported-cfi. Only consulted for
// registers that are unknown, so a known register's stale bit is harmless
// and the fast step writes here only when it loses RBP.
struct Unread {
  uint32_t below = 0;
  uint32_t above = 0;
  void Note(int reg, const CopyReader& read) {
    Forget(reg);
    (read.above ? above : below) |= 1u << reg;
  }
  void Forget(int reg) {
    below &= ~(1u << reg);
    above &= ~(1u << reg);
  }
  StackEnd Why(uint32_t missing) const {
    if (above & missing) return StackEnd::kStackCopyExhausted;
    if (below & missing) return StackEnd::kCfaOutsideCopy;
    return StackEnd::kUnsupportedCfi;
  }
};

// The registers an expression reads (DW_OP_breg*, DW_OP_reg*, DW_OP_bregx,
// DW_OP_regx).
uint32_t RegistersRead(std::span<const ExprOp> ops) {
  uint32_t mask = 0;
  for (const ExprOp& op : ops) {
    uint64_t r = kRegCount;
    if (op.atom >= DW_OP_breg0 && op.atom <= DW_OP_breg31) r = op.atom - DW_OP_breg0;
    if (op.atom >= DW_OP_reg0 && op.atom <= DW_OP_reg31) r = op.atom - DW_OP_reg0;
    if (op.atom == DW_OP_bregx || op.atom == DW_OP_regx) r = op.number;
    if (r < uint64_t(kRegCount)) mask |= 1u << r;
  }
  return mask;
}

enum class Step { kOk, kDone, kFailed };

// True when a register's save slot lies below both the frame's stack
// pointer and the copy's start: the slot was popped, so the register holds
// the saved value again. This is the sampled frame in an epilogue (after
// `pop %rbx` ... `pop %rbp`, GCC's CFI still names the slots, now below
// RSP), which elfutils and libunwind leave unknown: a caller whose CFA is
// RBP-based, as every function of a frame-pointer build and CPython's eval
// loop, then cut the stack (1.2% of an attached CPython 3.14's samples,
// all at _Py_Dealloc's pops and ret). Compilers save callee-saved registers
// by push, never by `mov` into the red zone (GCC 14 and clang 19 at -O2,
// -O3, -Os here spill locals there, after their pushes), so a slot below
// RSP is not a live save. In any other frame the SP is the callee's CFA,
// at or above the copy's start, and the slot is read as the CFI says.
bool Popped(uint64_t slot, uint64_t sp, const StackImage& stack) {
  return slot < sp && slot < stack.base;
}

// RBX's save slot, read only when a general row needs RBX (glibc's
// _dl_runtime_resolve defines its CFA from it). Followed only on a second
// pass over a stack whose first ended unsupported-cfi: following it at
// every fast step cost 8-15% of the unwinder's time (unwind_bench).
struct LazyRbx {
  bool pending = false;
  uint64_t slot = 0;
  // Puts RBX in `regs` from its slot, or leaves it unknown with the reason.
  void Resolve(Registers& regs, const StackImage& stack, Unread& unread) {
    if (!pending) return;
    pending = false;
    CopyReader read{stack};
    uint64_t v;
    if (read(slot, &v)) {
      regs.Set(kRegRbx, v);
      unread.Forget(kRegRbx);
    } else {
      unread.Note(kRegRbx, read);
    }
  }
};

// The common x86-64 row, updated in place: only RSP, RBP, RBX and the
// return address survive a fast step (CFI of the caller says nothing of the
// rest).
template <bool track_rbx>
Step StepFast(const CfiRow& row, Registers& regs, CopyReader& read, Unread& unread, StackEnd* end) {
  if (!regs.Has(row.cfa_reg)) {
    *end = unread.Why(1u << row.cfa_reg);
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
    // Only the CFA and the return address must come from the copy. After an
    // epilogue's `pop %rbp` GCC's CFI still says "RBP at CFA-16", a slot now
    // below RSP, where the copy starts: see Popped.
    const uint64_t slot = cfa + int64_t(row.rbp_offset);
    if (!Popped(slot, regs.value[kRegRsp], read.stack)) {
      has_rbp = read(slot, &rbp);
      if (!has_rbp) unread.Note(kRegRbp, read);
    }
  } else if (row.flags & CfiRow::kRbpUndefined) {
    has_rbp = false;
    unread.Forget(kRegRbp);
  }
  // RBX keeps its value on the second pass; a row that saves it is applied
  // by the caller.
  const uint32_t keep_rbx = track_rbx ? regs.valid & (1u << kRegRbx) : 0u;
  regs.valid = (1u << kRegRsp) | (1u << kRegRa) | (has_rbp ? 1u << kRegRbp : 0u) | keep_rbx;
  regs.value[kRegRsp] = cfa;
  regs.value[kRegRa] = ra;
  regs.value[kRegRbp] = rbp;
  return Step::kOk;
}

Step StepGeneral(const CfiTable& table, const CfiRow& row, Registers& regs, CopyReader& read,
                 Unread& unread, LazyRbx& rbx, StackEnd* end) {
  rbx.Resolve(regs, read.stack, unread);
  const GeneralRow& g = table.general(row.general);
  ReadWord reader = [&](uint64_t a, uint64_t* v) { return read(a, v); };
  ExprResult r;
  std::span<const ExprOp> cfa_ops = table.expr(g.cfa_begin, g.cfa_len);
  if (g.cfa_len == 0 || !EvaluateExpr(cfa_ops, regs, false, 0, reader, &r)) {
    *end =
        read.below || read.above ? read.Reason() : unread.Why(RegistersRead(cfa_ops) & ~regs.valid);
    return Step::kFailed;
  }
  uint64_t cfa = r.value;
  if (g.regs[kRegRa].kind == RuleKind::kUndefined) return Step::kDone;
  Registers next;
  Unread next_unread;
  for (int reg = 0; reg < kRegCount; ++reg) {
    const RegRule& rule = g.regs[reg];
    if (rule.kind == RuleKind::kSame) {
      if (regs.Has(reg)) {
        next.Set(reg, regs.value[reg]);
      } else {
        next_unread.below |= unread.below & (1u << reg);
        next_unread.above |= unread.above & (1u << reg);
      }
    } else if (rule.kind == RuleKind::kExpr) {
      // Each register's reads on their own: one register's slot outside the
      // copy leaves it unknown and does not name the return address's end.
      read.below = read.above = false;
      if (!EvaluateExpr(table.expr(rule.expr_begin, rule.expr_len), regs, true, cfa, reader, &r)) {
        if (reg == kRegRa) {
          *end = read.below || read.above ? read.Reason() : StackEnd::kUnsupportedCfi;
          return Step::kFailed;
        }
        if (read.below || read.above) next_unread.Note(reg, read);
        continue;  // an unrecoverable other register stays unknown
      }
      uint64_t v = r.value;
      if (!r.is_value && reg != kRegRa && Popped(r.value, regs.value[kRegRsp], read.stack)) {
        if (regs.Has(reg)) {
          next.Set(reg, regs.value[reg]);
        } else {
          next_unread.below |= unread.below & (1u << reg);
          next_unread.above |= unread.above & (1u << reg);
        }
        continue;
      }
      if (!r.is_value && !read(r.value, &v)) {
        if (reg == kRegRa) {
          *end = read.Reason();
          return Step::kFailed;
        }
        next_unread.Note(reg, read);
        continue;
      }
      next.Set(reg, v);
    }
  }
  if (!next.Has(kRegRsp)) next.Set(kRegRsp, cfa);
  regs = next;
  unread = next_unread;
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

// True when `regs` is the frame of a process's first instruction: the
// stack pointer is where the kernel left argc, argv, a null, envp, a null
// and the auxiliary vector. The dynamic loader's _start has no CFI, and
// calls _dl_start with that stack pointer, so its frame proves the stack
// whole as the CFI end marker of the program's own _start does.
bool AtProcessEntry(const Registers& regs, const StackImage& stack) {
  if (!regs.Has(kRegRsp)) return false;
  const uint64_t sp = regs.value[kRegRsp];
  uint64_t argc, word;
  if (!stack.Read(sp, &argc) || argc > stack.bytes.size() / 8) return false;
  uint64_t at = sp + 8;
  for (uint64_t i = 0; i < argc; ++i, at += 8) {
    if (!stack.Read(at, &word) || word <= sp) return false;  // argv strings lie above
  }
  if (!stack.Read(at, &word) || word != 0) return false;
  for (at += 8;; at += 8) {  // envp, up to its null
    if (!stack.Read(at, &word)) return false;
    if (word == 0) break;
    if (word <= sp) return false;
  }
  // The first auxiliary vector key: a small AT_* number (AT_NULL ends it).
  return stack.Read(at + 8, &word) && word > 0 && word < 256;
}

template <bool track_rbx>
UnwindResult UnwindPass(const Registers& initial, const StackImage& stack, CodeMap& code,
                        Policy policy, std::span<Frame> out) {
  UnwindResult result;
  Registers regs = initial;
  if (!regs.Has(kRegRa) || !regs.Has(kRegRsp)) {
    result.end = StackEnd::kEmpty;
    return result;
  }
  bool exact = true;
  Unread unread;
  LazyRbx rbx;
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
    out[result.frames++] = {pc, exact, regs.value[kRegRsp]};
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
      step = (row->flags & CfiRow::kGeneral)
                 ? StepGeneral(*info.table, *row, regs, read, unread, rbx, &end)
                 : StepFast<track_rbx>(*row, regs, read, unread, &end);
      if constexpr (track_rbx) {
        if ((row->flags & (CfiRow::kRbxSaved | CfiRow::kRbxUndefined)) != 0 &&
            (row->flags & CfiRow::kGeneral) == 0 && step == Step::kOk) {
          // RBX was saved at CFA + offset (the new RSP is the CFA), or lost;
          // a popped slot left it as it was.
          const bool saved = (row->flags & CfiRow::kRbxSaved) != 0;
          const uint64_t slot = regs.value[kRegRsp] + int64_t(row->rbx_offset);
          if (!saved || !Popped(slot, sp, stack)) {
            regs.Clear(kRegRbx);
            rbx.pending = saved;
            rbx.slot = slot;
            if (!rbx.pending) unread.Forget(kRegRbx);
          }
        }
      }
    } else if (info.frame_pointers ||
               (policy == Policy::kAuto && (info.table == nullptr || !info.table->has_cfi()))) {
      step = StepFramePointer(regs, read, &end);
      unread = {};
      rbx = {};
    } else {
      result.end = AtProcessEntry(regs, stack) ? StackEnd::kComplete : StackEnd::kNoUnwindInfo;
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
    // The stack grows down: every caller's frame lies above its callee's,
    // except that an interrupted frame may hold its return address in a
    // register with nothing pushed (glibc's __vfork pops it into RDI).
    if ((regs.value[kRegRsp] < sp || (regs.value[kRegRsp] == sp && !exact)) && !signal) {
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

}  // namespace

UnwindResult Unwind(const Registers& initial, const StackImage& stack, CodeMap& code, Policy policy,
                    std::span<Frame> out) {
  UnwindResult r = UnwindPass<false>(initial, stack, code, policy, out);
  if (r.end == StackEnd::kUnsupportedCfi) r = UnwindPass<true>(initial, stack, code, policy, out);
  return r;
}

}  // namespace microscope::unwind
