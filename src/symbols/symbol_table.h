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
  // How visible a symbol is, and whether it is a function or a label (a
  // NOTYPE symbol in code, as the loader's _start).
  enum class Binding : uint8_t { kLocal = 0, kWeak = 1, kGlobal = 2 };
  enum class Type : uint8_t { kLabel = 0, kFunction = 1 };

  // Among symbols at one address: the first added (kallsyms), or the name a
  // user would type (ELF symbol tables): the default export, then as perf
  // chooses.
  enum class Aliases : uint8_t { kFirstAdded, kPublicName };
  explicit SymbolTable(Aliases aliases = Aliases::kFirstAdded) : aliases_(aliases) {}

  struct Symbol {
    uint64_t start;
    uint64_t size;  // 0: unknown, extends to the next symbol
    uint32_t name;  // offset into names_
    Binding binding;
    Type type;
    bool default_export = false;  // set by Finish from AddDefaultExports
  };
  struct Match {
    std::string_view name;  // empty: no symbol holds the address
    // A global or weak function with a size: the name the program exports
    // for this code, which a user types (malloc, not __GI___libc_malloc).
    bool exported = false;
  };

  // Adds a symbol; call Finish() before Lookup().
  void Add(uint64_t start, uint64_t size, std::string_view name, Binding binding = Binding::kGlobal,
           Type type = Type::kFunction);
  // Names the module exports as their default version (its .dynsym, less
  // compatibility versions like cfree@GLIBC_2.2.5): among aliases, these win.
  void AddDefaultExports(const std::vector<std::string>& names);
  void Finish();

  // The symbol containing `addr`.
  Match Find(uint64_t addr) const;
  std::string_view Lookup(uint64_t addr) const { return Find(addr).name; }
  size_t size() const { return symbols_.size(); }

 private:
  // True when `a` names an address better than `b` (kPublicName).
  bool Better(const Symbol& a, const Symbol& b) const;

  Aliases aliases_;
  std::vector<std::string> default_exports_;  // sorted in Finish
  std::vector<Symbol> added_;                 // every symbol, so that Finish can run again
  std::vector<Symbol> symbols_;               // one per address, sorted (after Finish)
  std::string names_;
};

}  // namespace microscope::symbols
