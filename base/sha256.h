// SHA-256 (FIPS 180-4): the digest that names an imported file, so that the
// same file imported twice is known for what it is.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

namespace microscope {

std::array<uint8_t, 32> Sha256(std::span<const uint8_t> data);
// Lower-case hex, as sha256sum prints it.
std::string Sha256Hex(std::span<const uint8_t> data);

}  // namespace microscope
