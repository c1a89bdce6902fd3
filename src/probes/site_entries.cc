#include "src/probes/site_entries.h"

#include <cstring>

#include "base/hex.h"
#include "src/probes/abi.h"

namespace microscope::probes {
namespace {

// The entry at the front of `bytes`, which spans `size` bytes (its own
// claim, checked against what is there).
Result<SiteText> ParseEntry(std::span<const uint8_t> bytes, uint64_t address, uint16_t* size) {
  microscope_site h;
  if (bytes.size() < sizeof(h)) return Status::Error("site entry cut short");
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (h.magic != MICROSCOPE_SITE_MAGIC) return Status::Error("site entry without its magic");
  *size = h.size;
  if (h.size < sizeof(h) + 2 || h.size % 8 != 0 || h.size > bytes.size()) {
    return Status::Error("site entry of " + std::to_string(h.size) + " bytes in " +
                         std::to_string(bytes.size()));
  }
  if (h.kind < MICROSCOPE_KIND_ZONE || h.kind > MICROSCOPE_KIND_COUNTER) {
    return Status::Error("site of unknown kind " + std::to_string(h.kind));
  }
  const size_t text = h.size - sizeof(h);
  if (size_t(h.name_len) + h.file_len + 2 > text) {
    return Status::Error("site name and file (" + std::to_string(h.name_len) + " and " +
                         std::to_string(h.file_len) + " bytes) overrun the entry");
  }
  const char* chars = reinterpret_cast<const char*>(bytes.data() + sizeof(h));
  if (chars[h.name_len] != '\0' || chars[h.name_len + 1 + h.file_len] != '\0') {
    return Status::Error("site name or file does not end where its length says");
  }
  if (h.name_len == 0) return Status::Error("site without a name");
  SiteText site;
  site.address = address;
  site.kind = h.kind;
  site.line = h.line;
  site.name.assign(chars, h.name_len);
  site.file.assign(chars + h.name_len + 1, h.file_len);
  return site;
}

}  // namespace

SiteSection ParseSiteSection(std::span<const uint8_t> bytes, uint64_t address) {
  SiteSection out;
  size_t at = 0;
  while (at + 8 <= bytes.size()) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + at, sizeof(word));
    if (word == 0) {  // alignment padding between objects
      at += 8;
      continue;
    }
    uint16_t size = 0;
    Result<SiteText> site = ParseEntry(bytes.subspan(at), address + at, &size);
    if (site.ok()) {
      out.sites.push_back(std::move(site).value());
      at += size;
      continue;
    }
    if (out.malformed++ == 0) {
      out.first_error = site.status().message() + " at " + HexAddress(address + at);
    }
    at += 8;  // look for the next entry's magic
    while (at + 8 <= bytes.size()) {
      uint32_t magic;
      std::memcpy(&magic, bytes.data() + at, sizeof(magic));
      if (magic == MICROSCOPE_SITE_MAGIC) break;
      at += 8;
    }
  }
  return out;
}

Result<std::optional<SiteText>> ParseRuntimeSlot(std::span<const uint8_t> slot, uint64_t address) {
  uint32_t magic = 0;
  if (slot.size() >= sizeof(magic)) std::memcpy(&magic, slot.data(), sizeof(magic));
  if (magic == 0) return std::optional<SiteText>();
  uint16_t size = 0;
  Result<SiteText> site = ParseEntry(slot, address, &size);
  if (!site.ok()) return site.status().WithContext("run-time site at " + HexAddress(address));
  if (size != MICROSCOPE_RUNTIME_SITE_SIZE) {
    return Status::Error("run-time site at " + HexAddress(address) + " claims " +
                         std::to_string(size) + " bytes, not " +
                         std::to_string(MICROSCOPE_RUNTIME_SITE_SIZE));
  }
  return std::optional<SiteText>(std::move(site).value());
}

}  // namespace microscope::probes
