// A part's share of a whole, in percent, as every view shows it. Nothing of
// nothing is 0%: an empty recording has no hot function and nothing named.
#pragma once

#include <cstdint>

namespace microscope {

inline double Percent(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : 100.0 * double(part) / double(whole);
}

}  // namespace microscope
