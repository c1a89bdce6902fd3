// Hexadecimal as every command prints it: addresses with 0x, bytes (build
// IDs) as plain lower-case pairs; and percent-encoding for URLs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace microscope {

// "0x1f40"
std::string HexAddress(uint64_t value);
// The number `text` spells in hexadecimal digits (1 to 16 of them, either
// case, no 0x), or false.
bool ParseHex(std::string_view text, uint64_t* out);

// "9c1e03..." (two digits a byte, in order)
std::string HexBytes(std::span<const uint8_t> bytes);
// `text` for a URL's path or query: RFC 3986's unreserved characters kept,
// every other byte as %XX.
std::string UrlEncode(std::string_view text);

}  // namespace microscope
