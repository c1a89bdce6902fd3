// Helpers the analysis and formats tests share: a capture's flat profile by
// function name, and what a FILE* writer writes, as a string.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "analysis/keys.h"
#include "analysis/profile.h"
#include "capture/capture.h"

namespace microscope::testing {

// Function name -> self value.
inline std::map<std::string, uint64_t> SelfValues(const capture::Capture& c) {
  analysis::FunctionKeys keys(c);
  std::map<std::string, uint64_t> out;
  for (const auto& r : analysis::ComputeFlat(c, keys).rows) out[keys.Name(r.key)] = r.self.value;
  return out;
}

template <typename F>
std::string ToString(F write) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  write(f);
  fclose(f);
  std::string s(buf, size);
  free(buf);
  return s;
}

}  // namespace microscope::testing
