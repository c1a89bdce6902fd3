#include "src/symbols/dwarf_ranges.h"

#include <libdwarf/dwarf.h>

namespace microscope::symbols {
namespace {

using Ranges = std::vector<std::pair<uint64_t, uint64_t>>;

// DW_AT_high_pc: an address, or (DWARF 4 on) a size from `lo`.
bool HighPc(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Addr lo, Ranges* out) {
  Dwarf_Error err = nullptr;
  Dwarf_Addr hi = 0;
  Dwarf_Half form = 0;
  Dwarf_Form_Class form_class = DW_FORM_CLASS_UNKNOWN;
  if (dwarf_highpc_b(die, &hi, &form, &form_class, &err) != DW_DLV_OK) {
    DropError(dbg, err);
    return false;
  }
  if (form_class == DW_FORM_CLASS_CONSTANT) hi += lo;
  out->push_back({lo, hi});
  return true;
}

// DWARF 5: a list in .debug_rnglists, by index or offset.
bool RangeList(Dwarf_Debug dbg, Dwarf_Attribute attr, Ranges* out) {
  Dwarf_Error err = nullptr;
  Dwarf_Half attr_form = 0;
  Dwarf_Unsigned value = 0;
  Dwarf_Rnglists_Head head = nullptr;
  Dwarf_Unsigned count = 0, global_offset = 0;
  if (dwarf_whatform(attr, &attr_form, &err) != DW_DLV_OK ||
      (attr_form == DW_FORM_rnglistx ? dwarf_formudata(attr, &value, &err)
                                     : dwarf_global_formref(attr, &value, &err)) != DW_DLV_OK ||
      dwarf_rnglists_get_rle_head(attr, attr_form, value, &head, &count, &global_offset, &err) !=
          DW_DLV_OK) {
    DropError(dbg, err);
    return false;
  }
  bool ok = true;
  for (Dwarf_Unsigned i = 0; i < count; ++i) {
    unsigned length = 0, code = 0;
    Dwarf_Unsigned raw1 = 0, raw2 = 0, start = 0, end = 0;
    Dwarf_Bool unavailable = false;
    if (dwarf_get_rnglists_entry_fields_a(head, i, &length, &code, &raw1, &raw2, &unavailable,
                                          &start, &end, &err) != DW_DLV_OK) {
      DropError(dbg, err);
      ok = false;
      break;
    }
    if (code == DW_RLE_end_of_list) break;
    if (code == DW_RLE_base_address || code == DW_RLE_base_addressx || unavailable) continue;
    out->push_back({start, end});
  }
  dwarf_dealloc_rnglists_head(head);
  return ok;
}

// The low address of `die`'s unit: where .debug_ranges entries start from.
uint64_t UnitBase(Dwarf_Debug dbg, Dwarf_Die die) {
  Dwarf_Error err = nullptr;
  uint64_t base = 0;
  Dwarf_Die cu = nullptr;
  Dwarf_Off cu_offset = 0;
  if (dwarf_CU_dieoffset_given_die(die, &cu_offset, &err) == DW_DLV_OK &&
      dwarf_offdie_b(dbg, cu_offset, true, &cu, &err) == DW_DLV_OK) {
    Dwarf_Addr cu_low = 0;
    if (dwarf_lowpc(cu, &cu_low, &err) == DW_DLV_OK) base = cu_low;
    dwarf_dealloc_die(cu);
  }
  DropError(dbg, err);
  return base;
}

// Before DWARF 5: a list in .debug_ranges.
bool DebugRanges(Dwarf_Debug dbg, Dwarf_Die die, Dwarf_Attribute attr, Ranges* out) {
  Dwarf_Error err = nullptr;
  Dwarf_Off offset = 0;
  Dwarf_Ranges* ranges = nullptr;
  Dwarf_Signed count = 0;
  Dwarf_Unsigned bytes = 0;
  Dwarf_Off real = 0;
  if (dwarf_global_formref(attr, &offset, &err) != DW_DLV_OK ||
      dwarf_get_ranges_b(dbg, offset, die, &real, &ranges, &count, &bytes, &err) != DW_DLV_OK) {
    DropError(dbg, err);
    return false;
  }
  // Entries are relative to the CU's base address until a base address
  // selection entry says otherwise.
  uint64_t base = UnitBase(dbg, die);
  for (Dwarf_Signed i = 0; i < count; ++i) {
    if (ranges[i].dwr_type == DW_RANGES_END) break;
    if (ranges[i].dwr_type == DW_RANGES_ADDRESS_SELECTION) {
      base = ranges[i].dwr_addr2;
      continue;
    }
    out->push_back({base + ranges[i].dwr_addr1, base + ranges[i].dwr_addr2});
  }
  dwarf_ranges_dealloc(dbg, ranges, count);
  return true;
}

}  // namespace

bool ReadRanges(Dwarf_Debug dbg, Dwarf_Die die, uint16_t unit_version, Ranges* out) {
  Dwarf_Error err = nullptr;
  Dwarf_Addr lo = 0;
  if (dwarf_lowpc(die, &lo, &err) == DW_DLV_OK) return HighPc(dbg, die, lo, out);
  DropError(dbg, err);
  Dwarf_Attribute attr = nullptr;
  if (dwarf_attr(die, DW_AT_ranges, &attr, &err) != DW_DLV_OK) {
    DropError(dbg, err);
    return false;
  }
  bool ok = unit_version >= 5 ? RangeList(dbg, attr, out) : DebugRanges(dbg, die, attr, out);
  dwarf_dealloc(dbg, attr, DW_DLA_ATTR);
  return ok;
}

}  // namespace microscope::symbols
