// A count and its noun, as every command prints it: "1 thread",
// "2 threads", "1 process", "3 processes".
#pragma once

#include <cstdint>
#include <string>

namespace microscope {

// `plural` defaults to `singular` + "s".
inline std::string Counted(uint64_t n, const std::string& singular,
                           const std::string& plural = "") {
  return std::to_string(n) + " " + (n == 1 ? singular : plural.empty() ? singular + "s" : plural);
}

}  // namespace microscope
