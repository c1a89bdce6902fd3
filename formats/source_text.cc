#include "formats/source_text.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/open_file.h"

namespace microscope::formats {
namespace {

// The whole file (base's ReadRegularFile: no FIFO, no device, at most
// kMaxSourceBytes), or why not, in the words of a source view.
bool ReadWhole(const std::string& path, std::string* out, std::string* why) {
  if (path.empty() || path[0] != '/') {
    *why = "the capture names it by a relative path (" + path + ")";
    return false;
  }
  Result<std::vector<uint8_t>> bytes = ReadRegularFile(path, kMaxSourceBytes);
  if (!bytes.ok()) {
    const std::string m = bytes.status().message();
    const std::string kOpen = "cannot open: ";
    if (m.rfind(kOpen, 0) == 0) {
      *why = path + " is not readable on this host: " + m.substr(kOpen.size());
    } else if (m.rfind("larger than", 0) == 0) {
      *why = path + " is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
    } else {
      *why = path + " is " + m;  // "not a regular file", "cannot stat: ..."
    }
    return false;
  }
  out->assign(bytes->begin(), bytes->end());
  if (std::memchr(out->data(), '\0', out->size()) != nullptr) {
    *why = path + " is not a text file";
    return false;
  }
  return true;
}

void ReadFile(analysis::ReportSourceFile* file) {
  if (file->lines.empty()) return;
  std::string whole;
  if (!ReadWhole(file->path, &whole, &file->unreadable)) return;
  const uint32_t lo = file->lines.front().line, hi = file->lines.back().line;
  const uint32_t first = lo > kSourceContext ? lo - kSourceContext : 1;
  const uint32_t last = std::min(hi + kSourceContext, first + kMaxSourceLines - 1);
  uint32_t count = 0;  // lines read
  size_t at = 0;
  while (at < whole.size() && count < last) {
    size_t end = whole.find('\n', at);
    if (end == std::string::npos) end = whole.size();
    if (++count >= first) {
      std::string line = whole.substr(at, end - at);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      file->text.push_back(std::move(line));
    }
    at = end + 1;
  }
  if (count < std::min(hi, last)) {
    // The file on this host is not the one the capture saw.
    file->text.clear();
    file->unreadable = file->path + " has " + std::to_string(count) +
                       " lines, fewer than the capture's line " + std::to_string(hi) +
                       ": not the file that was profiled";
    return;
  }
  file->first = first;
}

}  // namespace

void ReadSourceText(analysis::ReportSource* source) {
  for (analysis::ReportSourceFile& f : source->files) ReadFile(&f);
}

}  // namespace microscope::formats
