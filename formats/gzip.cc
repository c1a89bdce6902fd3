#include "formats/gzip.h"

#include <zlib.h>

#include <cstring>

namespace microscope::formats {

std::vector<uint8_t> Gzip(std::span<const uint8_t> data, int level) {
  z_stream z;
  std::memset(&z, 0, sizeof(z));
  deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::vector<uint8_t> out(deflateBound(&z, uLong(data.size())) + 64);
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = uInt(data.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

bool IsGzip(std::span<const uint8_t> data) {
  return data.size() >= 2 && data[0] == 0x1f && data[1] == 0x8b;
}

Result<std::vector<uint8_t>> Gunzip(std::span<const uint8_t> data, size_t limit) {
  z_stream z;
  std::memset(&z, 0, sizeof(z));
  if (inflateInit2(&z, 15 + 32) != Z_OK) return Status::Error("zlib: cannot start inflating");
  z.next_in = const_cast<Bytef*>(data.data());
  z.avail_in = uInt(data.size());
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    z.next_out = buf;
    z.avail_out = sizeof(buf);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      std::string msg = z.msg ? z.msg : "error " + std::to_string(rc);
      size_t at = z.total_in;
      inflateEnd(&z);
      return Status::Error("gzip data is corrupt at compressed byte " + std::to_string(at) + ": " +
                           msg);
    }
    out.insert(out.end(), buf, buf + (sizeof(buf) - z.avail_out));
    if (out.size() > limit) {
      inflateEnd(&z);
      return Status::Error("gzip data inflates past " + std::to_string(limit) + " bytes");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      inflateEnd(&z);
      return Status::Error("gzip data is truncated at compressed byte " +
                           std::to_string(z.total_in));
    }
  }
  const size_t trailing = z.avail_in;
  const size_t end = z.total_in;
  inflateEnd(&z);
  if (trailing != 0) {
    return Status::Error(StatusCode::kDataLoss, std::to_string(trailing) +
                                                    " bytes after the gzip member's end at byte " +
                                                    std::to_string(end));
  }
  return out;
}

}  // namespace microscope::formats
