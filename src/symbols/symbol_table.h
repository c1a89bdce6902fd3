// A sorted table of function symbols for one module, searched by address.
// Built once per module image (keyed by build ID in SymbolCache) so that the
// per-frame lookup is a binary search, not a libdwfl call.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace microscope::symbols {

class SymbolTable {
 public:
  struct Symbol {
    uint64_t start;
    uint64_t size;  // 0: unknown, extends to the next symbol
    uint32_t name;  // offset into names_
  };

  // Adds a symbol; call Finish() before Lookup().
  void Add(uint64_t start, uint64_t size, std::string_view name);
  void Finish();

  // The symbol containing `addr`, or an empty view.
  std::string_view Lookup(uint64_t addr) const;
  size_t size() const { return symbols_.size(); }

 private:
  std::vector<Symbol> symbols_;
  std::string names_;
};

}  // namespace microscope::symbols
