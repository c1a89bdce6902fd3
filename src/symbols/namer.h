// Interns the names symbolization gives frames into a capture: functions
// by module and demangled name (the raw name kept beside), and strings.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "capture/capture.h"
#include "capture/string_table.h"

namespace microscope::symbols {

class Namer {
 public:
  explicit Namer(capture::Capture* c);

  // The function of `module` with raw (perhaps mangled) name `raw`, added
  // to the capture if it has none.
  capture::FunctionId Function(capture::ModuleId module, const std::string& raw);
  capture::StringId String(std::string_view s) {
    return s.empty() ? capture::kNone : strings_.Intern(s);
  }

 private:
  using Key = std::pair<capture::ModuleId, std::string>;
  struct KeyHash {
    size_t operator()(const Key& p) const {
      return std::hash<std::string>()(p.second) * 31 + p.first;
    }
  };
  capture::FunctionId Intern(capture::ModuleId module, const std::string& raw);

  capture::Capture* c_;
  capture::StringTable strings_;
  std::map<Key, capture::FunctionId> functions_;                  // by demangled name
  std::unordered_map<Key, capture::FunctionId, KeyHash> by_raw_;  // by raw name
};

}  // namespace microscope::symbols
