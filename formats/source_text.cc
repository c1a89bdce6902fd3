#include "formats/source_text.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "base/file_policy.h"

namespace microscope::formats {
namespace {

// A refusal of the file policy in the words of a source view: the errno of
// a component that cannot be opened as "not readable on this host", a
// refusal (which names what was refused) as it is.
std::string Reason(const std::string& path, const Status& s) {
  const std::string& m = s.message();
  if (m.rfind("cannot ", 0) == 0) {
    const size_t colon = m.rfind(": ");
    return path + " is not readable on this host: " +
           (colon == std::string::npos ? m : m.substr(colon + 2));
  }
  return m.find(path) != std::string::npos ? m : path + ": " + m;
}

std::string NotShown(const std::string& reason) {
  return reason.rfind("not shown: ", 0) == 0 ? reason : "not shown: " + reason;
}

// The whole file, or why not, in the words of a source view.
bool ReadWhole(const std::string& path, const SourceOpener& open, std::string* out,
               std::string* why) {
  Result<ScopedFd> fd = open(path);
  if (!fd.ok()) {
    *why = fd.status().message();
    return false;
  }
  Result<std::vector<uint8_t>> bytes = microscope::ReadWhole(fd->get(), kMaxSourceBytes);
  if (!bytes.ok()) {
    *why = bytes.status().code() == StatusCode::kDataLoss
               ? path + " is larger than " + std::to_string(kMaxSourceBytes >> 20) + " MiB"
               : path + " is not readable: " + bytes.status().message();
    return false;
  }
  out->assign(bytes->begin(), bytes->end());
  if (std::memchr(out->data(), '\0', out->size()) != nullptr) {
    *why = path + " is not a text file";
    return false;
  }
  return true;
}

void ReadFile(analysis::ReportSourceFile* file, const SourceOpener& open) {
  if (file->lines.empty()) return;
  std::string whole;
  if (!ReadWhole(file->path, open, &whole, &file->unreadable)) return;
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

SourceFiles::SourceFiles(SourceOptions options, ScopedFd root, uid_t root_owner)
    : options_(std::move(options)), root_(std::move(root)), root_owner_(root_owner) {}

Result<SourceFiles> SourceFiles::Open(const SourceOptions& options) {
  if (options.root.empty()) {
    if (!options.trim.empty()) {
      return Status::Error(StatusCode::kInvalidArgument,
                           "--trim-path needs --source-root: the directory to look in");
    }
    return SourceFiles(options, ScopedFd(), 0);
  }
  Result<ScopedFd> root = OpenDirectory(options.root);
  if (!root.ok())
    return Status::Error("--source-root " + options.root + ": " + root.status().message());
  struct stat st;
  if (fstat(root->get(), &st) != 0) {
    return Status::Error("--source-root " + options.root + ": " + std::strerror(errno));
  }
  return SourceFiles(options, std::move(root).value(), st.st_uid);
}

bool SourceFiles::Map(const std::string& path, std::string* relative) const {
  std::string rest = path;
  if (!options_.trim.empty()) {
    std::string trim = options_.trim;
    while (trim.size() > 1 && trim.back() == '/') trim.pop_back();
    if (path == trim) return false;
    if (trim == "/") {
      rest = path;
    } else if (path.compare(0, trim.size(), trim) == 0 && path[trim.size()] == '/') {
      rest = path.substr(trim.size());
    } else if (path.empty() || path[0] == '/') {
      return false;  // absolute, and not under PREFIX
    }
  }
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  if (rest.empty()) return false;
  *relative = rest;
  return true;
}

Result<ScopedFd> SourceFiles::OpenFile(const std::string& path) const {
  std::string relative;
  std::string outside;  // why the source root did not give it
  if (root_.valid() && Map(path, &relative)) {
    // Links of root's and of the tree's owner, and never out of the tree.
    Result<ScopedFd> fd = OpenBeneath(root_.get(), relative, {.link_owner = root_owner_});
    if (fd.ok()) return fd;
    const std::string where = options_.root + "/" + relative;
    if (fd.status().code() != StatusCode::kNotFound) {
      const std::string m = fd.status().message();
      const std::string why =
          path + " (as " + where + "): " + (m.rfind("cannot ", 0) == 0 ? "not readable: " + m : m);
      return Status::Error(StatusCode::kPermissionDenied,
                           options_.for_anyone ? NotShown(why) : why);
    }
    outside = "not in --source-root (no " + where + ")";
  } else if (root_.valid()) {
    outside = "outside --source-root " + options_.root +
              (options_.trim.empty() ? "" : " (not under --trim-path " + options_.trim + ")");
  }
  if (path.empty() || path[0] != '/') {
    return Status::Error(StatusCode::kInvalidArgument, "the capture names it by a relative path (" +
                                                           path + ")" +
                                                           (outside.empty() ? "" : ", " + outside));
  }
  if (options_.for_anyone) {
    Result<ScopedFd> fd = OpenUntrusted(path, {.world_readable = true});
    if (fd.ok()) return fd;
    std::string why = NotShown(Reason(path, fd.status()));
    return Status::Error(StatusCode::kPermissionDenied,
                         why + (outside.empty() ? "" : ", and " + outside));
  }
  Result<ScopedFd> fd = OpenUntrusted(path, {.link_owner = geteuid()});
  if (fd.ok()) return fd;
  return Status::Error(fd.status().code(), Reason(path, fd.status()));
}

void ReadSourceText(analysis::ReportSource* source, const SourceOpener& open) {
  for (analysis::ReportSourceFile& f : source->files) ReadFile(&f, open);
}

}  // namespace microscope::formats
