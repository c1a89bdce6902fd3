#include "src/unwind/cfi_rules.h"

#include <dwarf.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace microscope::unwind {
namespace {

constexpr uint32_t kNoGeneral = 0xFFFFFFFFu;

struct FrameDeleter {
  void operator()(Dwarf_Frame* f) const { free(f); }
};

bool IsCfaOffset(const Dwarf_Op* ops, size_t n, int64_t* offset) {
  if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
    *offset = 0;
    return true;
  }
  if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst) {
    *offset = int64_t(ops[1].number);
    return true;
  }
  return false;
}

// Fills `row`'s fast rules from `frame`. False when the rules do not all
// have the fast shape; the row then takes general rules (and keeps the
// fields set so far).
bool FastRules(Dwarf_Frame* frame, CfiRow* row) {
  Dwarf_Op* cfa_ops = nullptr;
  size_t cfa_n = 0;
  if (dwarf_frame_cfa(frame, &cfa_ops, &cfa_n) != 0 || cfa_n != 1 ||
      cfa_ops[0].atom != DW_OP_bregx ||
      (cfa_ops[0].number != uint64_t(kRegRsp) && cfa_ops[0].number != uint64_t(kRegRbp)) ||
      int64_t(cfa_ops[0].number2) != int32_t(cfa_ops[0].number2)) {
    return false;
  }
  row->cfa_reg = uint8_t(cfa_ops[0].number);
  row->cfa_offset = int32_t(cfa_ops[0].number2);
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  int64_t off = 0;
  // Return address.
  if (dwarf_frame_register(frame, kRegRa, mem, &ops, &n) != 0) return false;
  if (n == 0 && ops == mem) {
    row->flags |= CfiRow::kRaUndefined;
  } else if (IsCfaOffset(ops, n, &off) && off == int16_t(off)) {
    row->ra_offset = int16_t(off);
  } else {
    return false;
  }
  // RBP, and RBX for a caller whose CFA is RBX-based: same, undefined, or
  // saved at CFA + offset.
  auto saved = [&](int reg, uint8_t saved_flag, uint8_t undefined_flag, int16_t* offset) {
    if (dwarf_frame_register(frame, reg, mem, &ops, &n) != 0) return false;
    if (n == 0) {
      if (ops == mem) row->flags |= undefined_flag;
      return true;
    }
    if (!IsCfaOffset(ops, n, &off) || off != int16_t(off)) return false;
    row->flags |= saved_flag;
    *offset = int16_t(off);
    return true;
  };
  if (!saved(kRegRbp, CfiRow::kRbpSaved, CfiRow::kRbpUndefined, &row->rbp_offset) ||
      !saved(kRegRbx, CfiRow::kRbxSaved, CfiRow::kRbxUndefined, &row->rbx_offset)) {
    return false;
  }
  // RSP must be the CFA (val_offset 0) or unspecified for the fast path.
  if (dwarf_frame_register(frame, kRegRsp, mem, &ops, &n) == 0) {
    bool sp_is_cfa =
        n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_stack_value;
    if (!(sp_is_cfa || n == 0)) return false;
  }
  return true;
}

// Appends `ops` to `exprs`, setting where they start and how many.
void AddExpr(const Dwarf_Op* ops, size_t n, std::vector<ExprOp>* exprs, uint32_t* begin,
             uint32_t* len) {
  *begin = uint32_t(exprs->size());
  *len = uint32_t(n);
  for (size_t i = 0; i < n; ++i) exprs->push_back({ops[i].atom, ops[i].number, ops[i].number2});
}

// Every rule of `frame`, for the general evaluator; expressions go to `exprs`.
GeneralRow GeneralRules(Dwarf_Frame* frame, std::vector<ExprOp>* exprs) {
  GeneralRow g;
  Dwarf_Op* cfa_ops = nullptr;
  size_t cfa_n = 0;
  if (dwarf_frame_cfa(frame, &cfa_ops, &cfa_n) == 0 && cfa_n > 0) {
    AddExpr(cfa_ops, cfa_n, exprs, &g.cfa_begin, &g.cfa_len);
  }
  Dwarf_Op mem[3];
  Dwarf_Op* ops = nullptr;
  size_t n = 0;
  for (int r = 0; r < kRegCount; ++r) {
    if (dwarf_frame_register(frame, r, mem, &ops, &n) != 0) {
      g.regs[r].kind = RuleKind::kUndefined;
    } else if (n == 0) {
      g.regs[r].kind = ops == mem ? RuleKind::kUndefined : RuleKind::kSame;
    } else {
      g.regs[r].kind = RuleKind::kExpr;
      AddExpr(ops, n, exprs, &g.regs[r].expr_begin, &g.regs[r].expr_len);
    }
  }
  return g;
}

// The row for [pc, end) under `frame`'s rules; rules without the fast
// shape go to `general`, their expressions to `exprs`.
CfiRow MakeRow(Dwarf_Frame* frame, uint64_t pc, uint64_t end, bool signal,
               std::vector<GeneralRow>* general, std::vector<ExprOp>* exprs) {
  CfiRow row{};
  row.start = pc;
  row.length = uint32_t(std::min<uint64_t>(end - pc, 0xFFFFFFFFu));
  row.general = kNoGeneral;
  if (signal) row.flags |= CfiRow::kSignal;
  if (FastRules(frame, &row) && !signal) return row;
  GeneralRow g = GeneralRules(frame, exprs);
  row.flags |= CfiRow::kGeneral;
  if (g.regs[kRegRa].kind == RuleKind::kUndefined) row.flags |= CfiRow::kRaUndefined;
  row.general = uint32_t(general->size());
  general->push_back(g);
  row.cfa_reg = 0;
  row.cfa_offset = 0;
  return row;
}

// Appends `row`, extending the last row instead when the same rules
// continue.
void AppendRow(std::vector<CfiRow>* rows, const CfiRow& row) {
  if (!rows->empty() && rows->back().start + rows->back().length == row.start &&
      rows->back().SameRules(row) && (row.flags & CfiRow::kGeneral) == 0 &&
      uint64_t(rows->back().length) + row.length < 0xFFFFFFFFu) {
    rows->back().length += row.length;
  } else {
    rows->push_back(row);
  }
}

}  // namespace

uint64_t StepRows(Dwarf_CFI* cfi, uint64_t pc, uint64_t limit, std::vector<CfiRow>* rows,
                  std::vector<GeneralRow>* general, std::vector<ExprOp>* exprs) {
  for (int guard = 0; guard < 1 << 20 && pc < limit; ++guard) {
    Dwarf_Frame* raw = nullptr;
    if (dwarf_cfi_addrframe(cfi, pc, &raw) != 0) break;
    std::unique_ptr<Dwarf_Frame, FrameDeleter> frame(raw);
    Dwarf_Addr start = 0, end = 0;
    bool signal = false;
    if (dwarf_frame_info(frame.get(), &start, &end, &signal) < 0 || end <= pc) break;
    end = std::min<uint64_t>(end, limit);
    AppendRow(rows, MakeRow(frame.get(), pc, end, signal, general, exprs));
    pc = end;
  }
  return pc;
}

}  // namespace microscope::unwind
