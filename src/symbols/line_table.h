// Source lines and inline chains of one module's addresses, read from its
// DWARF (.debug_line, .debug_info) with libdwarf, the one DWARF reader used
// for lines and inlines (DESIGN.md).
//
// libdwarf and elfutils' libdw export functions of the same names
// (dwarf_lineno, dwarf_child, dwarf_attr, ...) with other signatures, and
// the unwinder needs libdw. And libdwarf is not safe on hostile input,
// which debug files are. So the reader is a program of its own,
// microscope-dwarf (dwarf_helper.cc: libdwarf, and nothing of libdw),
// installed beside microscope's other files and run with posix_spawn for
// each file: the file on its standard input, the table back on its
// standard output, checked here like any untrusted bytes. A crash, a hang
// or a lock held by another thread of the recorder costs the module its
// lines, never the process (a fork of the threaded recorder would inherit
// its locks).
//
// Tables are also kept in a cache by build ID (like perf's build-ID cache,
// but of the decoded tables), so a module's DWARF is read once per host.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace microscope::symbols {

inline constexpr uint32_t kNoName = 0xFFFFFFFFu;

// What one pass over a module's DWARF yields: sorted line rows, and the
// nesting of functions and inlined calls flattened into sorted segments.
struct LineTableData {
  struct Row {
    uint64_t address;
    uint32_t file;  // string id; kNoName: no line here
    uint32_t line;
  };
  struct Scope {
    uint32_t parent;     // enclosing scope, earlier in the table; kNoName for a function
    uint32_t name;       // string id (the linkage name when there is one)
    uint32_t call_file;  // inlined calls: the call site in the parent
    uint32_t call_line;
  };
  struct Segment {
    uint64_t start;  // from here to the next segment's start
    uint32_t scope;  // innermost scope; kNoName: a gap
    uint32_t reserved;
  };
  std::vector<Row> rows;
  std::vector<Scope> scopes;
  std::vector<Segment> segments;
  std::vector<std::string> strings;
};

// One frame of the source-level stack at an address.
struct SourceFrame {
  uint32_t function = kNoName;  // LineTable::String id
  uint32_t file = kNoName;
  uint32_t line = 0;
};

class LineTable {
 public:
  explicit LineTable(LineTableData data) : data_(std::move(data)) {}
  // The frames at `vaddr`, innermost (the most deeply inlined function)
  // first and the function that holds the code last. `out` is cleared; it
  // stays empty when neither a line row nor a function covers `vaddr`.
  void Lookup(uint64_t vaddr, std::vector<SourceFrame>* out) const;
  std::string_view String(uint32_t id) const {
    return id < data_.strings.size() ? std::string_view(data_.strings[id]) : std::string_view();
  }
  size_t line_rows() const { return data_.rows.size(); }
  size_t scopes() const { return data_.scopes.size(); }
  const LineTableData& data() const { return data_; }
  bool from_cache = false;

 private:
  LineTableData data_;
};

// Reads `path`'s DWARF through the helper, or the cached table for
// `build_id` when one was saved from this same file (size and mtime), and
// saves a fresh one. `cache_dir` empty: no cache. Errors say what was wrong;
// kNotFound means the file has no DWARF lines or functions, which is no
// problem of the file's.
Result<std::unique_ptr<LineTable>> OpenLineTable(const std::string& path,
                                                 const std::string& build_id_hex = "",
                                                 const std::string& cache_dir = "");

// The cache directory: $MICROSCOPE_CACHE_DIR (empty disables), else
// $XDG_CACHE_HOME/microscope, else ~/.cache/microscope.
std::string DefaultCacheDir();

// The cache file format, exposed for tests: serialized tables are checked
// like any untrusted input when read back.
std::vector<uint8_t> SerializeLineTable(const LineTableData& data, uint64_t file_size,
                                        int64_t mtime_ns);
Result<LineTableData> ParseLineTable(std::span<const uint8_t> bytes, uint64_t file_size,
                                     int64_t mtime_ns);

// The helper's reader (dwarf_lines.cc, in microscope-dwarf only) of the
// file open at `fd`. Its error is kNotFound when the file has no DWARF
// lines or functions (nothing to report), kDataLoss when its DWARF is
// damaged.
Status ReadDwarfLines(int fd, LineTableData* out);

}  // namespace microscope::symbols
