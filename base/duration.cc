#include "base/duration.h"

#include <charconv>
#include <cmath>
#include <string>

namespace microscope {
namespace {

struct Unit {
  std::string_view name;
  double ns;
};
constexpr Unit kUnits[] = {{"ns", 1},  {"us", 1e3}, {"\xC2\xB5s", 1e3}, {"ms", 1e6},
                           {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},      {"", 1e9}};

}  // namespace

Result<uint64_t> ParseDuration(std::string_view text) {
  auto bad = [&](const char* why) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "'" + std::string(text) + "' is not a duration: " + why +
                             " (a number and ns, us, ms, s, m or h, e.g. 500us, 1.5s)");
  };
  // Digits and at most one point: from_chars alone would take "inf", "1e3".
  size_t digits = 0;
  bool point = false;
  while (digits < text.size() &&
         ((text[digits] >= '0' && text[digits] <= '9') || (text[digits] == '.' && !point))) {
    point |= text[digits] == '.';
    ++digits;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + digits, value);
  if (digits == 0 || ec != std::errc() || end != text.data() + digits) return bad("no number");
  std::string_view unit = text.substr(digits);
  for (const Unit& u : kUnits) {
    if (unit != u.name) continue;
    double ns = value * u.ns;
    if (!std::isfinite(ns) || ns >= 18446744073709551615.0) return bad("too long");
    return uint64_t(ns);
  }
  return bad("unknown unit");
}

}  // namespace microscope
