// Hexadecimal as every command prints it: addresses with 0x, bytes (build
// IDs) as plain lower-case pairs.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace microscope {

// "0x1f40"
std::string HexAddress(uint64_t value);
// "9c1e03..." (two digits a byte, in order)
std::string HexBytes(std::span<const uint8_t> bytes);

}  // namespace microscope
