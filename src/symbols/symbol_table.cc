#include "src/symbols/symbol_table.h"

#include <algorithm>

namespace microscope::symbols {

void SymbolTable::Add(uint64_t start, uint64_t size, std::string_view name) {
  symbols_.push_back({start, size, uint32_t(names_.size())});
  names_.append(name);
  names_.push_back('\0');
}

void SymbolTable::Finish() {
  // Sort by address; among aliases at one address keep the first added (the
  // caller adds preferred bindings first) and the largest size.
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  std::vector<Symbol> unique;
  unique.reserve(symbols_.size());
  for (const Symbol& s : symbols_) {
    if (!unique.empty() && unique.back().start == s.start) {
      unique.back().size = std::max(unique.back().size, s.size);
      continue;
    }
    unique.push_back(s);
  }
  symbols_ = std::move(unique);
}

std::string_view SymbolTable::Lookup(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return {};
  const Symbol& s = *(it - 1);
  if (s.size != 0 && addr >= s.start + s.size) return {};
  return std::string_view(names_.c_str() + s.name);
}

}  // namespace microscope::symbols
