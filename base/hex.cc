#include "base/hex.h"

namespace microscope {
namespace {
constexpr char kDigits[] = "0123456789abcdef";
}  // namespace

std::string HexAddress(uint64_t value) {
  char buf[18];
  char* p = buf + sizeof(buf);
  do {
    *--p = kDigits[value & 15];
    value >>= 4;
  } while (value != 0);
  *--p = 'x';
  *--p = '0';
  return std::string(p, buf + sizeof(buf));
}

bool ParseHex(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 16) return false;
  uint64_t v = 0;
  for (char c : text) {
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return false;
    v = v << 4 | uint64_t(d);
  }
  *out = v;
  return true;
}

std::string HexBytes(std::span<const uint8_t> bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    const bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += char(c);
    } else {
      out += '%';
      out += "0123456789ABCDEF"[c >> 4];
      out += "0123456789ABCDEF"[c & 15];
    }
  }
  return out;
}

}  // namespace microscope
