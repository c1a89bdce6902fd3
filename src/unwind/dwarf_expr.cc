#include "src/unwind/dwarf_expr.h"

#include <dwarf.h>

#include <cstdint>
#include <utility>

namespace microscope::unwind {
namespace {

// The evaluation stack. The operations below check depth first: an
// expression that would overflow or underflow fails.
struct Stack {
  static constexpr size_t kMax = 16;
  uint64_t v[kMax];
  size_t depth = 0;

  bool Push(uint64_t x) {
    if (depth == kMax) return false;
    v[depth++] = x;
    return true;
  }
  uint64_t& Top() { return v[depth - 1]; }
};

// The helpers below run in the unwinder's hot path (CFA expressions): they
// are small, internal, and inlined into EvaluateExpr's loop.

// Register r plus `offset` (DW_OP_breg*, DW_OP_bregx, DW_OP_reg*).
bool PushRegister(const Registers& regs, uint64_t r, uint64_t offset, Stack* s) {
  return r < uint64_t(kRegCount) && regs.Has(int(r)) && s->Push(regs.value[r] + offset);
}

// The other operations that push an operand: DW_OP_bregx, the constants
// and DW_OP_call_frame_cfa. False for any operation not handled.
bool PushOperand(const ExprOp& op, const Registers& regs, bool has_cfa, uint64_t cfa, Stack* s) {
  switch (op.atom) {
    case DW_OP_bregx:
      return PushRegister(regs, op.number, op.number2, s);
    case DW_OP_const1u:
    case DW_OP_const1s:
    case DW_OP_const2u:
    case DW_OP_const2s:
    case DW_OP_const4u:
    case DW_OP_const4s:
    case DW_OP_const8u:
    case DW_OP_const8s:
    case DW_OP_constu:
    case DW_OP_consts:
      return s->Push(op.number);
    case DW_OP_call_frame_cfa:
      return has_cfa && s->Push(cfa);
    default:
      return false;
  }
}

// Binary operations; comparisons are signed, as DWARF defines them.
// (ld's PLT CFI computes the CFA with and, ge, shl and plus.)
bool Binary(uint8_t a, Stack* s) {
  if (s->depth < 2) return false;
  uint64_t b = s->v[--s->depth];
  uint64_t& x = s->Top();
  int64_t sx = int64_t(x), sb = int64_t(b);
  switch (a) {
    case DW_OP_plus:
      x += b;
      break;
    case DW_OP_minus:
      x -= b;
      break;
    case DW_OP_and:
      x &= b;
      break;
    case DW_OP_or:
      x |= b;
      break;
    case DW_OP_xor:
      x ^= b;
      break;
    case DW_OP_mul:
      x *= b;
      break;
    case DW_OP_div:
      if (sb == 0 || (sx == INT64_MIN && sb == -1)) return false;
      x = uint64_t(sx / sb);
      break;
    case DW_OP_mod:
      if (b == 0) return false;
      x %= b;
      break;
    case DW_OP_shl:
      x = b >= 64 ? 0 : x << b;
      break;
    case DW_OP_shr:
      x = b >= 64 ? 0 : x >> b;
      break;
    case DW_OP_shra:
      x = uint64_t(b >= 64 ? (sx < 0 ? -1 : 0) : sx >> b);
      break;
    case DW_OP_eq:
      x = sx == sb;
      break;
    case DW_OP_ne:
      x = sx != sb;
      break;
    case DW_OP_lt:
      x = sx < sb;
      break;
    case DW_OP_le:
      x = sx <= sb;
      break;
    case DW_OP_gt:
      x = sx > sb;
      break;
    case DW_OP_ge:
      x = sx >= sb;
      break;
  }
  return true;
}

// Operations on the top entry: DW_OP_neg, DW_OP_not, DW_OP_abs.
bool Unary(uint8_t a, Stack* s) {
  if (s->depth == 0) return false;
  uint64_t& x = s->Top();
  if (a == DW_OP_not) {
    x = ~x;
  } else if (a == DW_OP_neg || int64_t(x) < 0) {
    x = uint64_t(-int64_t(x));
  }
  return true;
}

// DW_OP_swap, DW_OP_over, DW_OP_dup, DW_OP_drop.
bool Shuffle(uint8_t a, Stack* s) {
  switch (a) {
    case DW_OP_swap:
      if (s->depth < 2) return false;
      std::swap(s->v[s->depth - 1], s->v[s->depth - 2]);
      return true;
    case DW_OP_over:
      return s->depth >= 2 && s->Push(s->v[s->depth - 2]);
    case DW_OP_dup:
      return s->depth > 0 && s->Push(s->Top());
    default:  // DW_OP_drop
      if (s->depth == 0) return false;
      --s->depth;
      return true;
  }
}

}  // namespace

bool EvaluateExpr(std::span<const ExprOp> ops, const Registers& regs, bool has_cfa, uint64_t cfa,
                  const ReadWord& read, ExprResult* out) {
  Stack s;
  bool is_value = false;
  for (const ExprOp& op : ops) {
    uint8_t a = op.atom;
    bool ok;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      ok = s.Push(a - DW_OP_lit0);
    } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      ok = PushRegister(regs, a - DW_OP_breg0, op.number, &s);
    } else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
      ok = PushRegister(regs, a - DW_OP_reg0, 0, &s);
      is_value = true;
    } else {
      switch (a) {
        case DW_OP_deref:
          ok = s.depth > 0 && read(s.Top(), &s.Top());
          break;
        case DW_OP_plus_uconst:
          ok = s.depth > 0;
          if (ok) s.Top() += op.number;
          break;
        case DW_OP_plus:
        case DW_OP_minus:
        case DW_OP_and:
        case DW_OP_or:
        case DW_OP_xor:
        case DW_OP_mul:
        case DW_OP_div:
        case DW_OP_mod:
        case DW_OP_shl:
        case DW_OP_shr:
        case DW_OP_shra:
        case DW_OP_eq:
        case DW_OP_ne:
        case DW_OP_lt:
        case DW_OP_le:
        case DW_OP_gt:
        case DW_OP_ge:
          ok = Binary(a, &s);
          break;
        case DW_OP_neg:
        case DW_OP_not:
        case DW_OP_abs:
          ok = Unary(a, &s);
          break;
        case DW_OP_swap:
        case DW_OP_over:
        case DW_OP_dup:
        case DW_OP_drop:
          ok = Shuffle(a, &s);
          break;
        case DW_OP_stack_value:
          is_value = true;
          ok = true;
          break;
        case DW_OP_regx:  // the register's value: libdw's form of DW_CFA_register
          ok = PushRegister(regs, op.number, 0, &s);
          is_value = true;
          break;
        case DW_OP_nop:
          ok = true;
          break;
        default:
          ok = PushOperand(op, regs, has_cfa, cfa, &s);
      }
    }
    if (!ok) return false;
  }
  if (s.depth == 0) return false;
  out->value = s.Top();
  out->is_value = is_value;
  return true;
}

}  // namespace microscope::unwind
