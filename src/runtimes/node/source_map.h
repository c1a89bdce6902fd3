// Source maps (version 3, as bundlers and tsc write them): where a
// generated script's line and column came from in the program's own
// sources. Read from what a target names (its script's last
// `//# sourceMappingURL=` comment: a data: URL in the script, or a file
// beside it), so every field is bounded and checked; a malformed map is
// refused with the place it breaks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace microscope::runtimes::node {

// An original place: 0-based line and column in sources[source]; name:
// index into names, -1 when the segment names nothing.
struct OriginalPlace {
  uint32_t source = 0;
  uint32_t line = 0;
  uint32_t column = 0;
  int32_t name = -1;
};

class SourceMap {
 public:
  // `json`: the map's text; `where`: how errors name it (its path, or the
  // script whose data: URL it was); `base`: the directory its relative
  // sources are resolved against ("" keeps them as written).
  static Result<SourceMap> Parse(std::string_view json, const std::string& where,
                                 const std::string& base);

  // Where the generated 0-based (line, column) came from: the segment of
  // that line at or before the column; nullopt when none maps it.
  std::optional<OriginalPlace> Find(uint32_t line, uint32_t column) const;
  const std::string& source(uint32_t i) const { return sources_[i]; }
  const std::string& name(int32_t i) const { return names_[size_t(i)]; }
  // What it keeps, in bytes (counted in the recording's target memory).
  uint64_t bytes() const;

 private:
  struct Segment {
    uint32_t column;  // generated
    uint32_t source;  // kUnmapped: a segment that maps to nothing
    uint32_t line;
    uint32_t original_column;
    int32_t name;
  };
  static constexpr uint32_t kUnmapped = UINT32_MAX;
  std::vector<std::string> sources_, names_;
  std::vector<uint32_t> lines_;  // generated line i's segments: [lines_[i], lines_[i + 1])
  std::vector<Segment> segments_;
};

// `path` joined to the directory `base`, "." and ".." folded (never above
// "/"); a file:// URL is its path; one of another scheme (webpack://) or
// absolute is kept as it is.
std::string ResolvePath(const std::string& base, std::string_view path);

// The URL named by a script source's last `//# sourceMappingURL=` (or
// `//@`) comment, as V8 takes it; nullopt when there is none.
std::optional<std::string> SourceMappingUrl(std::u16string_view source);

// The JSON of a `data:application/json[;charset=utf-8];base64,...` URL,
// at most `limit` bytes; an error saying why for any other data: URL.
Result<std::string> DecodeDataUrl(std::string_view url, size_t limit);

}  // namespace microscope::runtimes::node
