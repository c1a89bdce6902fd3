#include "src/unwind/dwarf_expr.h"

#include <dwarf.h>

#include <cstdint>
#include <utility>

namespace microscope::unwind {

bool EvaluateExpr(std::span<const ExprOp> ops, const Registers& regs, bool has_cfa, uint64_t cfa,
                  const ReadWord& read, ExprResult* out) {
  constexpr size_t kMaxStack = 16;
  uint64_t stack[kMaxStack];
  size_t depth = 0;
  auto push = [&](uint64_t v) {
    if (depth == kMaxStack) return false;
    stack[depth++] = v;
    return true;
  };
  bool is_value = false;
  for (const ExprOp& op : ops) {
    uint8_t a = op.atom;
    if (a >= DW_OP_lit0 && a <= DW_OP_lit31) {
      if (!push(a - DW_OP_lit0)) return false;
    } else if (a >= DW_OP_breg0 && a <= DW_OP_breg31) {
      int r = a - DW_OP_breg0;
      if (r >= kRegCount || !regs.Has(r) || !push(regs.value[r] + op.number)) return false;
    } else if (a >= DW_OP_reg0 && a <= DW_OP_reg31) {
      int r = a - DW_OP_reg0;
      if (r >= kRegCount || !regs.Has(r) || !push(regs.value[r])) return false;
      is_value = true;
    } else {
      switch (a) {
        case DW_OP_bregx:
          if (op.number >= kRegCount || !regs.Has(int(op.number))) return false;
          if (!push(regs.value[op.number] + op.number2)) return false;
          break;
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
          if (!push(op.number)) return false;
          break;
        case DW_OP_call_frame_cfa:
          if (!has_cfa || !push(cfa)) return false;
          break;
        case DW_OP_deref:
          if (depth == 0 || !read(stack[depth - 1], &stack[depth - 1])) return false;
          break;
        case DW_OP_plus_uconst:
          if (depth == 0) return false;
          stack[depth - 1] += op.number;
          break;
        // Binary operations; comparisons are signed, as DWARF defines them.
        // (ld's PLT CFI computes the CFA with and, ge, shl and plus.)
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
        case DW_OP_ge: {
          if (depth < 2) return false;
          uint64_t b = stack[--depth];
          uint64_t& x = stack[depth - 1];
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
          break;
        }
        case DW_OP_neg:
          if (depth == 0) return false;
          stack[depth - 1] = uint64_t(-int64_t(stack[depth - 1]));
          break;
        case DW_OP_not:
          if (depth == 0) return false;
          stack[depth - 1] = ~stack[depth - 1];
          break;
        case DW_OP_abs:
          if (depth == 0) return false;
          if (int64_t(stack[depth - 1]) < 0)
            stack[depth - 1] = uint64_t(-int64_t(stack[depth - 1]));
          break;
        case DW_OP_swap:
          if (depth < 2) return false;
          std::swap(stack[depth - 1], stack[depth - 2]);
          break;
        case DW_OP_over:
          if (depth < 2 || !push(stack[depth - 2])) return false;
          break;
        case DW_OP_dup:
          if (depth == 0 || !push(stack[depth - 1])) return false;
          break;
        case DW_OP_drop:
          if (depth == 0) return false;
          --depth;
          break;
        case DW_OP_stack_value:
          is_value = true;
          break;
        case DW_OP_nop:
          break;
        default:
          return false;
      }
    }
  }
  if (depth == 0) return false;
  out->value = stack[depth - 1];
  out->is_value = is_value;
  return true;
}

}  // namespace microscope::unwind
