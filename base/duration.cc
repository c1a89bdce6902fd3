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
constexpr Unit kUnits[] = {{"ns", 1},   {"us", 1e3},   {"\xC2\xB5s", 1e3}, {"ms", 1e6}, {"s", 1e9},
                           {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9},     {"", 1e9}};

}  // namespace

Result<uint64_t> ParseDuration(std::string_view text) {
  auto bad = [&](const char* why) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "'" + std::string(text) + "' is not a duration: " + why +
                             " (a number and ns, us, ms, s, m, h or d, e.g. 500us, 1.5s)");
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

Result<uint64_t> ParseByteSize(std::string_view text) {
  auto bad = [&](const char* why) {
    return Status::Error(StatusCode::kInvalidArgument,
                         "'" + std::string(text) + "' is not a size: " + why +
                             " (a number and K, M, G or T, powers of 1024, e.g. 500M, 2G)");
  };
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (end == text.data() || ec != std::errc()) return bad("no number");
  std::string_view unit = text.substr(size_t(end - text.data()));
  if (unit.ends_with("iB")) {
    unit.remove_suffix(2);
  } else if (unit.size() > 1 && unit.ends_with("B")) {
    unit.remove_suffix(1);
  }
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K" || unit == "k") shift = 10;
  if (unit == "M") shift = 20;
  if (unit == "G") shift = 30;
  if (unit == "T") shift = 40;
  if (shift < 0) return bad("unknown unit");
  if (shift > 0 && value > (UINT64_MAX >> shift)) return bad("too large");
  return value << shift;
}

}  // namespace microscope
