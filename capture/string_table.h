// Interns strings into a Capture's string table, so equal strings share an id.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "capture/capture.h"

namespace microscope::capture {

class StringTable {
 public:
  explicit StringTable(std::vector<std::string>* strings);
  StringId Intern(std::string_view s);

 private:
  // Looked up by string_view: interning a string already held (each
  // interpreted frame of each sample) makes no copy of it.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::vector<std::string>* strings_;
  std::unordered_map<std::string, StringId, Hash, std::equal_to<>> ids_;
};

}  // namespace microscope::capture
