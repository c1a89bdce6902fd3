// The serialized form of a line table (line_table.h): what the DWARF
// helper sends back and the cache keeps, read back like any untrusted
// bytes. Built into the recorder and into the helper, which has libdwarf
// and nothing of libdw.
#include <cstring>
#include <string>
#include <vector>

#include "src/symbols/line_table.h"

namespace microscope::symbols {
namespace {

constexpr char kCacheMagic[8] = {'M', 'S', 'L', 'I', 'N', 'E', 'S', '1'};

struct CacheHeader {
  char magic[8];
  uint64_t file_size;  // of the DWARF file the table was read from
  int64_t mtime_ns;
  uint32_t rows, scopes, segments, strings;
  uint64_t string_bytes;
};

template <typename T>
void Append(std::vector<uint8_t>* out, const T* data, size_t n) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data);
  out->insert(out->end(), p, p + n * sizeof(T));
}

}  // namespace

std::vector<uint8_t> SerializeLineTable(const LineTableData& d, uint64_t file_size,
                                        int64_t mtime_ns) {
  CacheHeader h{};
  std::memcpy(h.magic, kCacheMagic, sizeof(h.magic));
  h.file_size = file_size;
  h.mtime_ns = mtime_ns;
  h.rows = uint32_t(d.rows.size());
  h.scopes = uint32_t(d.scopes.size());
  h.segments = uint32_t(d.segments.size());
  h.strings = uint32_t(d.strings.size());
  std::vector<uint32_t> offsets{0};
  for (const std::string& s : d.strings) offsets.push_back(offsets.back() + uint32_t(s.size()));
  h.string_bytes = offsets.back();
  std::vector<uint8_t> out;
  Append(&out, &h, 1);
  Append(&out, d.rows.data(), d.rows.size());
  Append(&out, d.scopes.data(), d.scopes.size());
  Append(&out, d.segments.data(), d.segments.size());
  Append(&out, offsets.data(), offsets.size());
  for (const std::string& s : d.strings) Append(&out, s.data(), s.size());
  return out;
}

Result<LineTableData> ParseLineTable(std::span<const uint8_t> bytes, uint64_t file_size,
                                     int64_t mtime_ns) {
  CacheHeader h;
  if (bytes.size() < sizeof(h)) return Status::Error("shorter than its header");
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kCacheMagic, sizeof(h.magic)) != 0) return Status::Error("bad magic");
  if (h.file_size != file_size || h.mtime_ns != mtime_ns) {
    return Status::Error("made from another version of the file");
  }
  // Each part no larger than the file before they are added up: a huge
  // string_bytes must not wrap the sum around to the file's size.
  if (h.string_bytes > bytes.size()) return Status::Error("string bytes exceed the file");
  uint64_t need = sizeof(h) + uint64_t(h.rows) * sizeof(LineTableData::Row) +
                  uint64_t(h.scopes) * sizeof(LineTableData::Scope) +
                  uint64_t(h.segments) * sizeof(LineTableData::Segment) +
                  (uint64_t(h.strings) + 1) * 4 + h.string_bytes;
  if (need != bytes.size()) {
    return Status::Error("size " + std::to_string(bytes.size()) + " does not match its counts (" +
                         std::to_string(need) + ")");
  }
  LineTableData d;
  const uint8_t* p = bytes.data() + sizeof(h);
  auto take = [&p](auto* vec, size_t n) {
    vec->resize(n);
    if (n == 0) return;  // an empty vector's data() may be null: no memcpy
    std::memcpy(vec->data(), p, n * sizeof((*vec)[0]));
    p += n * sizeof((*vec)[0]);
  };
  take(&d.rows, h.rows);
  take(&d.scopes, h.scopes);
  take(&d.segments, h.segments);
  std::vector<uint32_t> offsets;
  take(&offsets, size_t(h.strings) + 1);
  if (offsets[0] != 0 || offsets.back() != h.string_bytes)
    return Status::Error("bad string offsets");
  for (uint32_t i = 0; i < h.strings; ++i) {
    if (offsets[i + 1] < offsets[i]) return Status::Error("bad string offsets");
  }
  d.strings.reserve(h.strings);
  for (uint32_t i = 0; i < h.strings; ++i) {
    d.strings.emplace_back(reinterpret_cast<const char*>(p) + offsets[i],
                           offsets[i + 1] - offsets[i]);
  }
  // Every reference in range, sorted where searched, parents before children.
  auto name_ok = [&](uint32_t id) { return id == kNoName || id < h.strings; };
  for (size_t i = 0; i < d.rows.size(); ++i) {
    if (!name_ok(d.rows[i].file) || (i > 0 && d.rows[i].address < d.rows[i - 1].address)) {
      return Status::Error("bad line row " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < d.scopes.size(); ++i) {
    const auto& s = d.scopes[i];
    if ((s.parent != kNoName && s.parent >= i) || !name_ok(s.name) || !name_ok(s.call_file)) {
      return Status::Error("bad scope " + std::to_string(i));
    }
  }
  for (size_t i = 0; i < d.segments.size(); ++i) {
    const auto& s = d.segments[i];
    if ((s.scope != kNoName && s.scope >= h.scopes) ||
        (i > 0 && s.start < d.segments[i - 1].start)) {
      return Status::Error("bad segment " + std::to_string(i));
    }
  }
  return d;
}

}  // namespace microscope::symbols
