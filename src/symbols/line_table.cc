#include "src/symbols/line_table.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>

#include <algorithm>
#include <map>
#include <memory>

#include "src/util/open_file.h"

namespace microscope::symbols {
namespace {

struct DwarfCloser {
  void operator()(Dwarf* dw) const { dwarf_end(dw); }
};

}  // namespace

// Read with elfutils' libdw, the DWARF reader the unwinder already uses:
// libdwarf exports functions of the same names (dwarf_lineaddr, dwarf_lineno,
// dwarf_linesrc, ...) with other signatures, so the two cannot share a binary.
Result<LineTable> LineTable::Load(const std::string& path) {
  ASSIGN_OR_RETURN(ScopedFd fd, OpenRegularFile(path));
  std::unique_ptr<Dwarf, DwarfCloser> dw(dwarf_begin(fd.get(), DWARF_C_READ));
  if (!dw) return Status::Error(std::string("no DWARF debug information: ") + dwarf_errmsg(-1));
  LineTable table;
  std::map<std::string, uint32_t> file_ids;
  Dwarf_Off offset = 0, next = 0;
  size_t header_size = 0;
  while (dwarf_next_unit(dw.get(), offset, &next, &header_size, nullptr, nullptr, nullptr, nullptr,
                         nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    Dwarf_Lines* lines = nullptr;
    size_t count = 0;
    if (dwarf_offdie(dw.get(), offset + header_size, &cu) != nullptr &&
        dwarf_getsrclines(&cu, &lines, &count) == 0) {
      // Relative file names are relative to the unit's compilation directory.
      Dwarf_Attribute attr;
      const char* comp_dir = dwarf_formstring(dwarf_attr(&cu, DW_AT_comp_dir, &attr));
      for (size_t i = 0; i < count; ++i) {
        Dwarf_Line* line = dwarf_onesrcline(lines, i);
        Dwarf_Addr addr = 0;
        bool end_sequence = false;
        int lineno = 0;
        if (line == nullptr || dwarf_lineaddr(line, &addr) != 0 ||
            dwarf_lineendsequence(line, &end_sequence) != 0) {
          continue;
        }
        if (end_sequence) {
          table.rows_.push_back({addr, kNoFile, 0});
          continue;
        }
        const char* src = dwarf_linesrc(line, nullptr, nullptr);
        if (src == nullptr || dwarf_lineno(line, &lineno) != 0 || lineno <= 0) continue;
        std::string name = src;
        if (name[0] != '/' && comp_dir != nullptr) name = std::string(comp_dir) + "/" + name;
        auto [it, inserted] = file_ids.try_emplace(name, uint32_t(table.files_.size()));
        if (inserted) table.files_.push_back(name);
        table.rows_.push_back({addr, it->second, uint32_t(lineno)});
      }
    }
    offset = next;
  }
  if (table.rows_.empty()) return Status::Error("no line information (.debug_line)");
  // By address; at one address the last row wins, and an end-of-sequence
  // row yields to a row that starts there.
  std::stable_sort(table.rows_.begin(), table.rows_.end(),
                   [](const Row& a, const Row& b) { return a.address < b.address; });
  std::vector<Row> unique;
  unique.reserve(table.rows_.size());
  for (const Row& r : table.rows_) {
    if (!unique.empty() && unique.back().address == r.address) {
      if (r.file != kNoFile) unique.back() = r;
      continue;
    }
    unique.push_back(r);
  }
  table.rows_ = std::move(unique);
  return table;
}

bool LineTable::Lookup(uint64_t vaddr, std::string_view* file, uint32_t* line) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), vaddr,
                             [](uint64_t a, const Row& r) { return a < r.address; });
  if (it == rows_.begin()) return false;
  const Row& r = *(it - 1);
  if (r.file == kNoFile || r.line == 0) return false;
  *file = files_[r.file];
  *line = r.line;
  return true;
}

}  // namespace microscope::symbols
