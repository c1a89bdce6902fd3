// Names a JavaScript function from the objects a walk saw: its
// SharedFunctionInfo, proved still to be one with the name and script the
// walk read (not moved by the GC, nor its memory reused), its name (a
// string, or the function name kept in its ScopeInfo once it is compiled,
// falling back to V8's inferred name, as V8's own DebugName does), its
// script's name and where in the script it starts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "src/runtimes/node/heap_reader.h"
#include "src/runtimes/node/layout.h"

namespace microscope::runtimes::node {

struct FunctionInfo {
  std::string name;            // "(anonymous)" when V8 has none
  std::string script;          // the script's name (path or URL); "" for code with none
  uint64_t script_source = 0;  // the script's source string, 0: none
  int64_t start = -1;          // the function's start in its source (UTF-16 units), -1: unknown
  std::string script_error;    // non-empty: its script's name could not be read, why
};

// kNotFound: the object is no longer the one the walk saw.
Result<FunctionInfo> ReadFunction(HeapReader& heap, const V8Layout& layout, uint64_t shared,
                                  uint64_t name_seen, uint64_t script_seen);

// Where each line of a source starts (UTF-16 units), for lines of positions.
class SourceLines {
 public:
  explicit SourceLines(const std::u16string& source);
  // The 1-based line of `position`.
  uint32_t LineOf(int64_t position) const;
  // Its 0-based column in that line (UTF-16 units, as source maps count).
  uint32_t ColumnOf(int64_t position) const;

 private:
  std::vector<int64_t> starts_;
};

}  // namespace microscope::runtimes::node
