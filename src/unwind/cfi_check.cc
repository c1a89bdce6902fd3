#include "src/unwind/cfi_check.h"

#include <dwarf.h>

#include <map>
#include <string>

namespace microscope::unwind {
namespace {

// The highest DWARF register number accepted in a rule. x86-64's numbers
// end near 130 (the mask registers k0-k7 are 118-125).
constexpr uint64_t kMaxRegister = 255;

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;

  bool Skip(size_t n) {
    if (size_t(end - p) < n) return ok = false;
    p += n;
    return true;
  }
  uint8_t Byte() {
    if (p >= end) {
      ok = false;
      return 0;
    }
    return *p++;
  }
  uint64_t Uleb() {
    uint64_t v = 0;
    for (int shift = 0; p < end; shift += 7) {
      uint8_t b = *p++;
      if (shift < 64) v |= uint64_t(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok = false;
    return 0;
  }
  void Sleb() { (void)Uleb(); }
};

// Bytes of a pointer in `encoding` (DW_EH_PE_*), 0 for a LEB128 one, -1
// for an encoding libdw would not read either.
int PointerSize(uint8_t encoding, int address_size) {
  switch (encoding & 0x0f) {
    case DW_EH_PE_absptr:
      return address_size;
    case DW_EH_PE_uleb128:
    case DW_EH_PE_sleb128:
      return 0;
    case DW_EH_PE_udata2:
    case DW_EH_PE_sdata2:
      return 2;
    case DW_EH_PE_udata4:
    case DW_EH_PE_sdata4:
      return 4;
    case DW_EH_PE_udata8:
    case DW_EH_PE_sdata8:
      return 8;
    default:
      return -1;
  }
}

bool SkipPointer(Cursor* c, uint8_t encoding, int address_size) {
  int size = PointerSize(encoding, address_size);
  if (size < 0) return false;
  if (size == 0) {
    (void)c->Uleb();
    return c->ok;
  }
  return c->Skip(size_t(size));
}

struct CieInfo {
  uint8_t fde_encoding = DW_EH_PE_absptr;
  bool z = false;
  size_t fde_augmentation_size = 0;
};

// Checks one instruction stream's register operands. Scanning stops where
// libdw's interpreter would stop too: an unknown opcode or a truncated
// operand is an error there.
Status CheckInstructions(const uint8_t* begin, const uint8_t* end, const CieInfo& cie,
                         int address_size, uint64_t record) {
  Cursor c{begin, end};
  auto reg = [](uint64_t n) -> bool { return n <= kMaxRegister; };
  uint64_t r = 0;
  while (c.ok && c.p < c.end) {
    uint8_t op = c.Byte();
    switch (op & 0xc0) {
      case DW_CFA_advance_loc:
      case DW_CFA_restore:
        continue;  // register in the low 6 bits: at most 63
      case DW_CFA_offset:
        (void)c.Uleb();
        continue;
    }
    switch (op) {
      case DW_CFA_nop:
      case DW_CFA_remember_state:
      case DW_CFA_restore_state:
      case DW_CFA_GNU_window_save:
        break;
      case DW_CFA_set_loc:
        if (!SkipPointer(&c, cie.fde_encoding, address_size)) c.ok = false;
        break;
      case DW_CFA_advance_loc1:
        c.Skip(1);
        break;
      case DW_CFA_advance_loc2:
        c.Skip(2);
        break;
      case DW_CFA_advance_loc4:
        c.Skip(4);
        break;
      case DW_CFA_MIPS_advance_loc8:
        c.Skip(8);
        break;
      case DW_CFA_def_cfa_offset:
      case DW_CFA_GNU_args_size:
        (void)c.Uleb();
        break;
      case DW_CFA_def_cfa_offset_sf:
        c.Sleb();
        break;
      case DW_CFA_def_cfa_expression:
        c.Skip(c.Uleb());
        break;
      case DW_CFA_restore_extended:
      case DW_CFA_undefined:
      case DW_CFA_same_value:
      case DW_CFA_def_cfa_register:
        r = c.Uleb();
        if (!reg(r)) goto bad;
        break;
      case DW_CFA_offset_extended:
      case DW_CFA_def_cfa:
      case DW_CFA_val_offset:
      case DW_CFA_GNU_negative_offset_extended:
        r = c.Uleb();
        if (!reg(r)) goto bad;
        (void)c.Uleb();
        break;
      case DW_CFA_offset_extended_sf:
      case DW_CFA_def_cfa_sf:
      case DW_CFA_val_offset_sf:
        r = c.Uleb();
        if (!reg(r)) goto bad;
        c.Sleb();
        break;
      case DW_CFA_register:
        r = c.Uleb();
        if (!reg(r)) goto bad;
        r = c.Uleb();
        if (!reg(r)) goto bad;
        break;
      case DW_CFA_expression:
      case DW_CFA_val_expression:
        r = c.Uleb();
        if (!reg(r)) goto bad;
        c.Skip(c.Uleb());
        break;
      default:
        return OkStatus();  // libdw stops here
    }
  }
  return OkStatus();
bad:
  return Status::Error("CFI record at offset " + std::to_string(record) + " names register " +
                       std::to_string(r) + " (at most " + std::to_string(kMaxRegister) +
                       " exist): damaged CFI");
}

CieInfo ReadAugmentation(const Dwarf_CIE& cie) {
  CieInfo info;
  info.fde_augmentation_size = cie.fde_augmentation_data_size;
  const char* a = cie.augmentation != nullptr ? cie.augmentation : "";
  if (a[0] != 'z') return info;
  info.z = true;
  Cursor c{cie.augmentation_data, cie.augmentation_data + cie.augmentation_data_size};
  for (const char* k = a + 1; *k != '\0' && c.ok; ++k) {
    switch (*k) {
      case 'R':
        info.fde_encoding = c.Byte();
        break;
      case 'L':
        (void)c.Byte();
        break;
      case 'P': {
        uint8_t encoding = c.Byte();
        SkipPointer(&c, encoding, 8);
        break;
      }
      default:
        return info;  // the rest is not understood; 'z' sizes it
    }
  }
  return info;
}

}  // namespace

Status CheckCfiSection(const unsigned char* e_ident, Elf_Data* data, bool eh_frame,
                       std::span<const uint64_t> fde_offsets) {
  const int address_size = e_ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
  std::map<uint64_t, CieInfo> cies;
  std::map<uint64_t, Dwarf_CFI_Entry> fdes;
  for (Dwarf_Off offset = 0, next = 0;; offset = next) {
    Dwarf_CFI_Entry entry;
    if (dwarf_next_cfi(e_ident, data, eh_frame, offset, &next, &entry) != 0 || next <= offset) {
      break;  // the end, or a record libdw cannot read either
    }
    if (dwarf_cfi_cie_p(&entry)) {
      if (entry.cie.return_address_register > kMaxRegister) {
        return Status::Error("CIE at offset " + std::to_string(offset) +
                             " names return address register " +
                             std::to_string(entry.cie.return_address_register) + ": damaged CFI");
      }
      CieInfo info = ReadAugmentation(entry.cie);
      RETURN_IF_ERROR(CheckInstructions(entry.cie.initial_instructions,
                                        entry.cie.initial_instructions_end, info, address_size,
                                        offset));
      cies.emplace(offset, info);
    } else {
      fdes.emplace(offset, entry);
    }
  }
  for (const auto& [offset, entry] : fdes) {
    auto cie = cies.find(entry.fde.CIE_pointer);
    if (cie == cies.end()) continue;  // libdw refuses an FDE without its CIE
    Cursor c{entry.fde.start, entry.fde.end};
    if (!SkipPointer(&c, cie->second.fde_encoding, address_size) ||
        !SkipPointer(&c, cie->second.fde_encoding & 0x0f, address_size)) {
      continue;  // not readable: libdw refuses it too
    }
    if (cie->second.z) {
      c.Skip(c.Uleb());
    } else {
      c.Skip(cie->second.fde_augmentation_size);
    }
    if (!c.ok) continue;
    RETURN_IF_ERROR(CheckInstructions(c.p, c.end, cie->second, address_size, offset));
  }
  // An index may point anywhere: only at the records checked above.
  for (uint64_t offset : fde_offsets) {
    if (!fdes.count(offset)) {
      return Status::Error(".eh_frame_hdr points at offset " + std::to_string(offset) +
                           ", where no FDE starts: damaged CFI");
    }
  }
  return OkStatus();
}

}  // namespace microscope::unwind
