#include "src/symbols/debug_info.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>

#include <algorithm>
#include <cstdlib>
#include <map>

#include "src/util/open_file.h"

namespace microscope::symbols {
namespace {

std::string WithCompDir(const char* name, const char* comp_dir) {
  std::string out = name;
  if (!out.empty() && out[0] != '/' && comp_dir != nullptr) out = std::string(comp_dir) + "/" + out;
  return out;
}

const char* CompDir(Dwarf_Die* cu) {
  Dwarf_Attribute attr;
  return dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr));
}

// The name of an inlined subroutine (through its abstract origin), demangled.
std::string InlinedName(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  if (linkage != nullptr) {
    int status = 0;
    char* out = abi::__cxa_demangle(linkage, nullptr, nullptr, &status);
    if (status == 0 && out != nullptr) {
      std::string name(out);
      free(out);
      return name;
    }
  }
  const char* name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
  return name != nullptr ? name : "?";
}

}  // namespace

DebugInfo::~DebugInfo() {
  if (dwarf_ != nullptr) dwarf_end(dwarf_);
}

Result<std::unique_ptr<DebugInfo>> DebugInfo::Load(const std::string& path) {
  std::unique_ptr<DebugInfo> info(new DebugInfo());
  ASSIGN_OR_RETURN(info->fd_, OpenRegularFile(path));
  info->dwarf_ = dwarf_begin(info->fd_.get(), DWARF_C_READ);
  if (info->dwarf_ == nullptr) {
    return Status::Error(std::string("no DWARF debug information: ") + dwarf_errmsg(-1));
  }
  std::map<std::string, uint32_t> file_ids;
  Dwarf_Off offset = 0, next = 0;
  size_t header_size = 0;
  while (dwarf_next_unit(info->dwarf_, offset, &next, &header_size, nullptr, nullptr, nullptr,
                         nullptr, nullptr, nullptr) == 0) {
    Dwarf_Die cu;
    Dwarf_Lines* lines = nullptr;
    size_t count = 0;
    if (dwarf_offdie(info->dwarf_, offset + header_size, &cu) != nullptr &&
        dwarf_getsrclines(&cu, &lines, &count) == 0) {
      const char* comp_dir = CompDir(&cu);
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
          info->rows_.push_back({addr, kNoFile, 0});
          continue;
        }
        const char* src = dwarf_linesrc(line, nullptr, nullptr);
        if (src == nullptr || dwarf_lineno(line, &lineno) != 0 || lineno <= 0) {
          info->rows_.push_back({addr, kNoFile, 0});  // code with no line: no answer
          continue;
        }
        std::string name = WithCompDir(src, comp_dir);
        auto [it, inserted] = file_ids.try_emplace(name, uint32_t(info->files_.size()));
        if (inserted) info->files_.push_back(name);
        info->rows_.push_back({addr, it->second, uint32_t(lineno)});
      }
    }
    offset = next;
  }
  if (info->rows_.empty()) return Status::Error("no line information (.debug_line)");
  // By address; at one address the last row wins, and an end-of-sequence
  // row yields to a row that starts there.
  std::stable_sort(info->rows_.begin(), info->rows_.end(),
                   [](const Row& a, const Row& b) { return a.address < b.address; });
  std::vector<Row> unique;
  unique.reserve(info->rows_.size());
  for (const Row& r : info->rows_) {
    if (!unique.empty() && unique.back().address == r.address) {
      if (r.file != kNoFile) unique.back() = r;
      continue;
    }
    unique.push_back(r);
  }
  info->rows_ = std::move(unique);
  return info;
}

bool DebugInfo::Lookup(uint64_t vaddr, std::string_view* file, uint32_t* line) const {
  auto it = std::upper_bound(rows_.begin(), rows_.end(), vaddr,
                             [](uint64_t a, const Row& r) { return a < r.address; });
  if (it == rows_.begin()) return false;
  const Row& r = *(it - 1);
  if (r.file == kNoFile || r.line == 0) return false;
  *file = files_[r.file];
  *line = r.line;
  return true;
}

std::vector<InlineCall> DebugInfo::InlineChain(uint64_t vaddr) const {
  std::vector<InlineCall> chain;
  Dwarf_Die cu;
  if (dwarf_addrdie(dwarf_, vaddr, &cu) == nullptr) return chain;
  Dwarf_Die* scopes = nullptr;
  int n = dwarf_getscopes(&cu, vaddr, &scopes);
  if (n <= 0) return chain;
  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  dwarf_getsrcfiles(&cu, &files, &nfiles);
  const char* comp_dir = CompDir(&cu);
  for (int i = 0; i < n; ++i) {
    if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine) continue;
    InlineCall call;
    call.function = InlinedName(&scopes[i]);
    Dwarf_Attribute attr;
    Dwarf_Word file_index = 0, line = 0;
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_file, &attr), &file_index) == 0 &&
        files != nullptr && file_index < nfiles) {
      const char* name = dwarf_filesrc(files, file_index, nullptr, nullptr);
      if (name != nullptr) call.call_file = WithCompDir(name, comp_dir);
    }
    if (dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &line) == 0) {
      call.call_line = uint32_t(line);
    }
    chain.push_back(std::move(call));
  }
  free(scopes);
  return chain;
}

}  // namespace microscope::symbols
