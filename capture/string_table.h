// Interns strings into a Capture's string table, so equal strings share an id.
#pragma once

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
  std::vector<std::string>* strings_;
  std::unordered_map<std::string, StringId> ids_;
};

}  // namespace microscope::capture
