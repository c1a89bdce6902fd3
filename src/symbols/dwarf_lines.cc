// The libdwarf side of line_table.h, built into microscope-dwarf.
//
// One pass over a module's DWARF builds two sorted tables:
//  - line rows (address -> file, line) from every CU's line program;
//  - scope segments (address -> innermost function or inlined call), from
//    the nesting of DW_TAG_subprogram and DW_TAG_inlined_subroutine ranges,
//    each scope knowing its parent, its name and, when inlined, where it
//    was called from.
// The result is a LineTableData; lookups (two binary searches and a walk up
// the parents) happen on the main side (line_table.cc).
#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include <algorithm>
#include <unordered_map>

#include "src/symbols/dwarf_ranges.h"
#include "src/symbols/line_table.h"

namespace microscope::symbols {
namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;

class DwarfReader {
 public:
  explicit DwarfReader(LineTableData* out) : out_(*out) {}
  ~DwarfReader() {
    if (dbg_ != nullptr) dwarf_finish(dbg_, nullptr);
  }
  // kNotFound: the file has no DWARF, or none with lines or functions;
  // kDataLoss: its DWARF is damaged.
  Status Load(int fd);

 private:
  using Row = LineTableData::Row;
  using Scope = LineTableData::Scope;
  struct Range {
    uint64_t lo, hi;
    uint32_t scope, depth;
  };
  // Per-CU state of the walk.
  struct Unit {
    uint16_t version = 0;         // the unit's: picks .debug_rnglists or .debug_ranges
    uint16_t line_version = 0;    // its line table's: how files are numbered
    std::vector<uint32_t> files;  // file number (as the CU counts) -> string id
    uint32_t File(uint64_t number) const {
      // DWARF 5 line tables number files from 0, earlier versions from 1.
      uint16_t v = line_version != 0 ? line_version : version;
      uint64_t index = v >= 5 ? number : number - 1;
      return number == 0 && v < 5 ? kNone : index < files.size() ? files[index] : kNone;
    }
  };

  uint32_t Intern(const char* s);
  bool Unsigned(Dwarf_Die die, Dwarf_Half at, uint64_t* value);
  bool ProducedByGcc(Dwarf_Die cu);
  void ReadUnit(Dwarf_Die cu);
  void Walk(Dwarf_Die die, const Unit& unit, uint32_t parent, uint32_t depth, int level);
  void AddScope(Dwarf_Die die, Dwarf_Half tag, const Unit& unit, uint32_t parent, uint32_t depth,
                uint32_t* scope_out);
  uint32_t NameOf(Dwarf_Die die, int hops);
  void BuildSegments();
  void Drop(Dwarf_Error& err) { DropError(dbg_, err); }

  LineTableData& out_;
  Dwarf_Debug dbg_ = nullptr;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::unordered_map<Dwarf_Off, uint32_t> names_;  // DIE offset -> name id
  std::vector<Range> ranges_;
};

uint32_t DwarfReader::Intern(const char* s) {
  if (s == nullptr) return kNone;
  auto [it, inserted] = string_ids_.try_emplace(s, uint32_t(out_.strings.size()));
  if (inserted) out_.strings.push_back(it->first);
  return it->second;
}

Status DwarfReader::Load(int fd) {
  Dwarf_Error err = nullptr;
  // Every DIE, attribute, string and list is freed here as soon as it is
  // used, so libdwarf need not track its allocations (a search tree that
  // cost about a fifth of the load).
  dwarf_set_de_alloc_flag(0);
  int res = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, nullptr, nullptr, &dbg_, &err);
  if (res == DW_DLV_NO_ENTRY)
    return Status::Error(StatusCode::kNotFound, "no DWARF debug information");
  if (res != DW_DLV_OK) {
    Status unreadable =
        Status::Error(StatusCode::kDataLoss, std::string("unreadable DWARF: ") + dwarf_errmsg(err));
    dwarf_dealloc_error(nullptr, err);
    dbg_ = nullptr;
    return unreadable;
  }
  for (;;) {
    Dwarf_Unsigned next = 0;
    Dwarf_Half version = 0, unit_type = 0;
    res = dwarf_next_cu_header_d(dbg_, true, nullptr, &version, nullptr, nullptr, nullptr, nullptr,
                                 nullptr, nullptr, &next, &unit_type, &err);
    if (res == DW_DLV_NO_ENTRY) break;
    if (res != DW_DLV_OK) {
      Status bad = Status::Error(StatusCode::kDataLoss,
                                 std::string("bad .debug_info unit header: ") + dwarf_errmsg(err));
      Drop(err);
      return bad;
    }
    Dwarf_Die cu = nullptr;
    if (dwarf_siblingof_b(dbg_, nullptr, true, &cu, &err) != DW_DLV_OK) {
      Status bad = Status::Error(StatusCode::kDataLoss,
                                 std::string("bad .debug_info unit: ") + dwarf_errmsg(err));
      Drop(err);
      return bad;
    }
    ReadUnit(cu);
    dwarf_dealloc_die(cu);
  }
  if (out_.rows.empty() && out_.scopes.empty()) {
    return Status::Error(StatusCode::kNotFound, "no line or function information in its DWARF");
  }
  // By address; at one address the last row wins, and an end-of-sequence
  // row yields to a row that starts there.
  std::stable_sort(out_.rows.begin(), out_.rows.end(),
                   [](const Row& a, const Row& b) { return a.address < b.address; });
  std::vector<Row> unique;
  unique.reserve(out_.rows.size());
  for (const Row& r : out_.rows) {
    if (!unique.empty() && unique.back().address == r.address) {
      if (r.file != kNone) unique.back() = r;
      continue;
    }
    unique.push_back(r);
  }
  out_.rows = std::move(unique);
  BuildSegments();
  names_.clear();
  return OkStatus();
}

void DwarfReader::ReadUnit(Dwarf_Die cu) {
  Dwarf_Error err = nullptr;
  Unit unit;
  Dwarf_Half version = 0, offset_size = 0;
  if (dwarf_get_version_of_die(cu, &version, &offset_size) == DW_DLV_OK) unit.version = version;
  char** files = nullptr;
  Dwarf_Signed nfiles = 0;
  if (dwarf_srcfiles(cu, &files, &nfiles, &err) == DW_DLV_OK) {
    for (Dwarf_Signed i = 0; i < nfiles; ++i) {
      unit.files.push_back(Intern(files[i]));
      dwarf_dealloc(dbg_, files[i], DW_DLA_STRING);
    }
    dwarf_dealloc(dbg_, files, DW_DLA_LIST);
  } else {
    Drop(err);
  }
  Dwarf_Unsigned line_version = 0;
  Dwarf_Small table_count = 0;
  Dwarf_Line_Context context = nullptr;
  if (dwarf_srclines_b(cu, &line_version, &table_count, &context, &err) == DW_DLV_OK) {
    // File numbers count as the line table's version says (a DWARF 5 line
    // table numbers from 0), whatever the unit's own version.
    if (line_version >= 2 && line_version <= 5) unit.line_version = uint16_t(line_version);
    // This libdwarf starts a DWARF 5 sequence's file register at 0, not at
    // the 1 the standard says: rows before a DW_LNS_set_file report file 0.
    // GCC never sets file 0 (for GCC it is the unit's name; its rows say
    // 1), so for GCC's units a 0 is the default 1. (eu-addr2line agrees;
    // binutils 2.40's addr2line has the same slip as libdwarf.)
    bool default_file_is_one = line_version >= 5 && ProducedByGcc(cu);
    Dwarf_Line* lines = nullptr;
    Dwarf_Signed count = 0;
    if (dwarf_srclines_from_linecontext(context, &lines, &count, &err) == DW_DLV_OK) {
      // A sequence that starts at address 0 is code the linker discarded
      // (a duplicate COMDAT, --gc-sections): it would shadow real code at
      // low addresses. No ELF file has code at 0.
      bool in_sequence = false, discarded = false;
      for (Dwarf_Signed i = 0; i < count; ++i) {
        Dwarf_Addr addr = 0;
        Dwarf_Bool end = false;
        Dwarf_Unsigned lineno = 0, fileno = 0;
        if (dwarf_lineaddr(lines[i], &addr, &err) != DW_DLV_OK ||
            dwarf_lineendsequence(lines[i], &end, &err) != DW_DLV_OK) {
          Drop(err);
          continue;
        }
        if (!in_sequence) {
          in_sequence = true;
          discarded = addr == 0;
        }
        if (end) in_sequence = false;
        if (discarded) continue;
        if (end || dwarf_lineno(lines[i], &lineno, &err) != DW_DLV_OK || lineno == 0 ||
            dwarf_line_srcfileno(lines[i], &fileno, &err) != DW_DLV_OK) {
          Drop(err);
          out_.rows.push_back({addr, kNone, 0});
          continue;
        }
        if (fileno == 0 && default_file_is_one) fileno = 1;
        uint32_t file = unit.File(fileno);
        out_.rows.push_back({addr, file, file == kNone ? 0 : uint32_t(lineno)});
      }
    } else {
      Drop(err);
    }
    dwarf_srclines_dealloc_b(context);
  } else {
    Drop(err);
  }
  Walk(cu, unit, kNone, 0, 0);
}

bool DwarfReader::ProducedByGcc(Dwarf_Die cu) {
  Dwarf_Error err = nullptr;
  Dwarf_Attribute attr = nullptr;
  if (dwarf_attr(cu, DW_AT_producer, &attr, &err) != DW_DLV_OK) {
    Drop(err);
    return false;
  }
  char* text = nullptr;
  bool gcc = dwarf_formstring(attr, &text, &err) == DW_DLV_OK && text != nullptr &&
             std::string_view(text).starts_with("GNU ");
  Drop(err);
  dwarf_dealloc(dbg_, attr, DW_DLA_ATTR);
  return gcc;
}

// Children of `die`, looking for functions and inlined calls. Type DIEs
// hold no code, so their subtrees are skipped.
void DwarfReader::Walk(Dwarf_Die die, const Unit& unit, uint32_t parent, uint32_t depth,
                       int level) {
  if (level > 256) return;  // a corrupt (or absurd) nesting: stop, not overflow
  Dwarf_Error err = nullptr;
  Dwarf_Die child = nullptr;
  if (dwarf_child(die, &child, &err) != DW_DLV_OK) {
    Drop(err);
    return;
  }
  while (child != nullptr) {
    Dwarf_Half tag = 0;
    if (dwarf_tag(child, &tag, &err) == DW_DLV_OK) {
      switch (tag) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine: {
          uint32_t scope = kNone;
          // A function nested in a function is a function of its own.
          AddScope(child, tag, unit, tag == DW_TAG_subprogram ? kNone : parent,
                   tag == DW_TAG_subprogram ? 0 : depth + 1, &scope);
          if (scope != kNone) {
            Walk(child, unit, scope, tag == DW_TAG_subprogram ? 0 : depth + 1, level + 1);
          } else {
            Walk(child, unit, parent, depth, level + 1);
          }
          break;
        }
        case DW_TAG_lexical_block:
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
          Walk(child, unit, parent, depth, level + 1);
          break;
        default:
          break;
      }
    } else {
      Drop(err);
    }
    Dwarf_Die next = nullptr;
    int res = dwarf_siblingof_b(dbg_, child, true, &next, &err);
    dwarf_dealloc_die(child);
    if (res != DW_DLV_OK) {
      Drop(err);
      break;
    }
    child = next;
  }
}

void DwarfReader::AddScope(Dwarf_Die die, Dwarf_Half tag, const Unit& unit, uint32_t parent,
                           uint32_t depth, uint32_t* scope_out) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (!ReadRanges(dbg_, die, unit.version, &ranges) || ranges.empty()) return;
  Scope scope{kNone, kNone, kNone, 0};
  scope.parent = parent;
  scope.name = NameOf(die, 0);
  if (tag == DW_TAG_inlined_subroutine) {
    uint64_t value = 0;
    if (Unsigned(die, DW_AT_call_file, &value)) scope.call_file = unit.File(value);
    if (Unsigned(die, DW_AT_call_line, &value)) scope.call_line = uint32_t(value);
  }
  uint32_t id = uint32_t(out_.scopes.size());
  out_.scopes.push_back(scope);
  for (auto [lo, hi] : ranges) {
    if (hi > lo && lo != 0) ranges_.push_back({lo, hi, id, depth});  // 0: discarded code
  }
  *scope_out = id;
}

// An attribute's unsigned value. GCC 12 gives DW_AT_call_file and
// DW_AT_call_line DW_FORM_implicit_const (the value lives in the abbrev),
// which this libdwarf's dwarf_formudata refuses and dwarf_formsdata reads.
bool DwarfReader::Unsigned(Dwarf_Die die, Dwarf_Half at, uint64_t* value) {
  Dwarf_Error err = nullptr;
  Dwarf_Attribute attr = nullptr;
  if (dwarf_attr(die, at, &attr, &err) != DW_DLV_OK) {
    Drop(err);
    return false;
  }
  Dwarf_Half form = 0;
  bool ok = false;
  if (dwarf_whatform(attr, &form, &err) == DW_DLV_OK && form == DW_FORM_implicit_const) {
    Dwarf_Signed v = 0;
    ok = dwarf_formsdata(attr, &v, &err) == DW_DLV_OK && v >= 0;
    *value = uint64_t(v);
  } else {
    Dwarf_Unsigned v = 0;
    ok = dwarf_formudata(attr, &v, &err) == DW_DLV_OK;
    *value = v;
  }
  Drop(err);
  dwarf_dealloc(dbg_, attr, DW_DLA_ATTR);
  return ok;
}

// The linkage name, else the name, following the abstract origin or the
// declaration (specification) a DIE refers to. Cached by DIE offset.
uint32_t DwarfReader::NameOf(Dwarf_Die die, int hops) {
  Dwarf_Error err = nullptr;
  Dwarf_Off offset = 0;
  if (dwarf_dieoffset(die, &offset, &err) != DW_DLV_OK) {
    Drop(err);
    return kNone;
  }
  if (auto it = names_.find(offset); it != names_.end()) return it->second;
  uint32_t name = kNone;
  for (Dwarf_Half at : {Dwarf_Half(DW_AT_linkage_name), Dwarf_Half(DW_AT_MIPS_linkage_name),
                        Dwarf_Half(DW_AT_name)}) {
    Dwarf_Attribute attr = nullptr;
    if (dwarf_attr(die, at, &attr, &err) != DW_DLV_OK) {
      Drop(err);
      continue;
    }
    char* text = nullptr;
    if (dwarf_formstring(attr, &text, &err) == DW_DLV_OK) name = Intern(text);
    Drop(err);
    dwarf_dealloc(dbg_, attr, DW_DLA_ATTR);
    if (name != kNone) break;
  }
  if (name == kNone && hops < 8) {
    for (Dwarf_Half at : {Dwarf_Half(DW_AT_abstract_origin), Dwarf_Half(DW_AT_specification)}) {
      Dwarf_Attribute attr = nullptr;
      if (dwarf_attr(die, at, &attr, &err) != DW_DLV_OK) {
        Drop(err);
        continue;
      }
      Dwarf_Off target = 0;
      Dwarf_Die other = nullptr;
      if (dwarf_global_formref(attr, &target, &err) == DW_DLV_OK &&
          dwarf_offdie_b(dbg_, target, true, &other, &err) == DW_DLV_OK) {
        name = NameOf(other, hops + 1);
        dwarf_dealloc_die(other);
      }
      Drop(err);
      dwarf_dealloc(dbg_, attr, DW_DLA_ATTR);
      if (name != kNone) break;
    }
  }
  names_.emplace(offset, name);
  return name;
}

// Flattens the nested ranges into segments that each name the innermost
// scope covering them.
void DwarfReader::BuildSegments() {
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) {
    if (a.lo != b.lo) return a.lo < b.lo;
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.hi > b.hi;
  });
  auto emit = [&](uint64_t at, uint32_t scope) {
    if (!out_.segments.empty() && out_.segments.back().start == at) {
      out_.segments.back().scope = scope;
      if (out_.segments.size() >= 2 && out_.segments[out_.segments.size() - 2].scope == scope) {
        out_.segments.pop_back();
      }
      return;
    }
    if (out_.segments.empty() || out_.segments.back().scope != scope) {
      out_.segments.push_back({at, scope, 0});
    }
  };
  std::vector<Range> open;
  auto close_until = [&](uint64_t at) {
    while (!open.empty() && open.back().hi <= at) {
      uint64_t end = open.back().hi;
      open.pop_back();
      emit(end, open.empty() ? kNone : open.back().scope);
    }
  };
  for (Range r : ranges_) {
    close_until(r.lo);
    // Ranges that overlap without nesting (rare, from odd producers) are
    // cut at the enclosing range's end.
    if (!open.empty()) r.hi = std::min(r.hi, open.back().hi);
    if (r.hi <= r.lo) continue;
    emit(r.lo, r.scope);
    open.push_back(r);
  }
  close_until(~uint64_t{0});
  ranges_.clear();
  ranges_.shrink_to_fit();
}

}  // namespace
}  // namespace microscope::symbols

namespace microscope::symbols {

Status ReadDwarfLines(int fd, LineTableData* out) {
  *out = {};
  DwarfReader reader(out);
  return reader.Load(fd);
}

}  // namespace microscope::symbols
