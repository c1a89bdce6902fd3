// The pieces of Chrome trace JSON both of its writers (chrome.cc,
// chrome_probes.cc) append by hand: streamed, without a JSON tree.
#pragma once

#include <nlohmann/json.hpp>

#include <charconv>
#include <cstdint>
#include <string>

namespace microscope::formats {

// A JSON string; names may hold invalid UTF-8 (a comm cut mid-character):
// replaced, never thrown on.
inline std::string Quote(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Appends ns as microseconds with three decimals, without floating point.
inline void AppendMicros(std::string& out, uint64_t ns) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof(buf), ns / 1000).ptr;
  out.append(buf, end);
  unsigned frac = unsigned(ns % 1000);
  out += '.';
  out += char('0' + frac / 100);
  out += char('0' + frac / 10 % 10);
  out += char('0' + frac % 10);
}

}  // namespace microscope::formats
