#include "src/symbols/symbol_table.h"

#include <algorithm>

namespace microscope::symbols {
namespace {

size_t LeadingUnderscores(std::string_view name) {
  size_t n = 0;
  while (n < name.size() && name[n] == '_') ++n;
  return n;
}

}  // namespace

void SymbolTable::Add(uint64_t start, uint64_t size, std::string_view name, Binding binding,
                      Type type) {
  added_.push_back({start, size, uint32_t(names_.size()), binding, type});
  names_.append(name);
  names_.push_back('\0');
}

// perf's choice among aliases (tools/perf/util/symbol.c, choose_best_symbol):
// a function over a label (a NOTYPE symbol), one with a size, a strong symbol over
// a weak one, a global over a local, fewer leading underscores, and the
// longer name; at a full tie the first added. Before the binding rules, a
// default-version export (free, not its compatibility alias cfree).
bool SymbolTable::Better(const Symbol& a, const Symbol& b) const {
  if (a.type != b.type) return a.type == Type::kFunction;
  if ((a.size != 0) != (b.size != 0)) return a.size != 0;
  if (a.default_export != b.default_export) return a.default_export;
  if ((a.binding == Binding::kWeak) != (b.binding == Binding::kWeak))
    return b.binding == Binding::kWeak;
  if ((a.binding == Binding::kGlobal) != (b.binding == Binding::kGlobal))
    return a.binding == Binding::kGlobal;
  std::string_view na(names_.c_str() + a.name), nb(names_.c_str() + b.name);
  size_t ua = LeadingUnderscores(na), ub = LeadingUnderscores(nb);
  if (ua != ub) return ua < ub;
  return na.size() > nb.size();
}

void SymbolTable::AddDefaultExports(const std::vector<std::string>& names) {
  default_exports_.insert(default_exports_.end(), names.begin(), names.end());
}

void SymbolTable::Finish() {
  std::sort(default_exports_.begin(), default_exports_.end());
  symbols_ = added_;
  for (Symbol& s : symbols_) {
    s.default_export = std::binary_search(default_exports_.begin(), default_exports_.end(),
                                          std::string_view(names_.c_str() + s.name));
  }
  // Sort by address; one symbol per address, with the largest size of its
  // aliases (of its functions, when it has any: a label reaches only to its
  // section's end, past the function it marks).
  std::stable_sort(symbols_.begin(), symbols_.end(),
                   [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  std::vector<Symbol> unique;
  unique.reserve(symbols_.size());
  for (const Symbol& s : symbols_) {
    if (unique.empty() || unique.back().start != s.start) {
      unique.push_back(s);
      continue;
    }
    Symbol& kept = unique.back();
    uint64_t size = kept.type != s.type ? (kept.type == Type::kFunction ? kept.size : s.size)
                                        : std::max(kept.size, s.size);
    if (aliases_ == Aliases::kPublicName && Better(s, kept)) kept = s;
    kept.size = size;
  }
  symbols_ = std::move(unique);
}

SymbolTable::Match SymbolTable::Find(uint64_t addr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), addr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  if (it == symbols_.begin()) return {};
  const Symbol& s = *(it - 1);
  if (s.size != 0 && addr >= s.start + s.size) return {};
  return {std::string_view(names_.c_str() + s.name),
          s.binding != Binding::kLocal && s.type == Type::kFunction && s.size != 0};
}

}  // namespace microscope::symbols
