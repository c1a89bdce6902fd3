// A small evaluator for the DWARF expressions that CFI uses on x86-64:
// register-relative addresses, constants, arithmetic, dereference of the
// copied stack, DW_OP_call_frame_cfa and DW_OP_stack_value. Anything else
// fails the evaluation (the unwinder then ends the stack, typed).
#pragma once

#include <cstdint>
#include <functional>
#include <span>

namespace microscope::unwind {

// DWARF x86-64 register numbers (RAX RDX RCX RBX RSI RDI RBP RSP R8..R15, RA).
inline constexpr int kRegRbx = 3;
inline constexpr int kRegRbp = 6;
inline constexpr int kRegRsp = 7;
inline constexpr int kRegRa = 16;
inline constexpr int kRegCount = 17;

struct Registers {
  uint64_t value[kRegCount] = {};
  uint32_t valid = 0;  // bit per register
  bool Has(int r) const { return (valid >> r) & 1; }
  void Set(int r, uint64_t v) {
    value[r] = v;
    valid |= 1u << r;
  }
  void Clear(int r) { valid &= ~(1u << r); }
};

// One operation as libdw delivers it (Dwarf_Op without the offset field).
struct ExprOp {
  uint8_t atom;
  uint64_t number;
  uint64_t number2;
};

using ReadWord = std::function<bool(uint64_t address, uint64_t* value)>;

struct ExprResult {
  uint64_t value;
  bool is_value;  // DW_OP_stack_value: the result is the value, not its address
};

// Evaluates `ops`. `cfa` is pushed by DW_OP_call_frame_cfa (if `has_cfa`).
bool EvaluateExpr(std::span<const ExprOp> ops, const Registers& regs, bool has_cfa, uint64_t cfa,
                  const ReadWord& read, ExprResult* out);

}  // namespace microscope::unwind
