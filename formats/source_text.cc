#include "formats/source_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "base/scoped_fd.h"

namespace microscope::formats {
namespace {

// The whole file, or why not.
bool ReadWhole(const std::string& path, std::string* out, std::string* why) {
  if (path.empty() || path[0] != '/') {
    *why = "the capture names it by a relative path (" + path + ")";
    return false;
  }
  // O_NONBLOCK: a FIFO under that name must not hang the report.
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    *why = path + " is not readable on this host: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *why = path + " is not a regular file";
    return false;
  }
  if (uint64_t(st.st_size) > kMaxSourceBytes) {
    *why = path + " is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB";
    return false;
  }
  out->resize(size_t(st.st_size));
  size_t got = 0;
  while (got < out->size()) {
    ssize_t n = read(fd.get(), out->data() + got, out->size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *why = path + ": " + std::strerror(errno);
      return false;
    }
    if (n == 0) break;  // it shrank while read
    got += size_t(n);
  }
  out->resize(got);
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
