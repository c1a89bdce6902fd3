#include "src/runtimes/jit/perf_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <iterator>

#include "base/file_policy.h"
#include "base/scoped_fd.h"

namespace microscope::runtimes::jit {
namespace {

bool Hex(std::string_view s, uint64_t* out) {
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

PerfMapLines ParsePerfMapLines(std::string_view text) {
  PerfMapLines out;
  size_t at = 0;
  for (size_t nl; (nl = text.find('\n', at)) != std::string_view::npos; at = nl + 1) {
    std::string_view line = text.substr(at, nl - at);
    const size_t a = line.find(' ');
    const size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    uint64_t start, size;
    if (b == std::string_view::npos || !Hex(line.substr(0, a), &start) ||
        !Hex(line.substr(a + 1, b - a - 1), &size) || size == 0 || start + size < start ||
        b + 1 >= line.size()) {
      ++out.malformed;
      continue;
    }
    out.symbols.push_back({start, start + size, std::string(line.substr(b + 1))});
  }
  out.consumed = at;
  return out;
}

uint64_t SymbolRanges::Cost(const JitSymbol& s) {
  constexpr uint64_t kNode = 48;  // a std::map node's own bytes beside its value
  return kNode + sizeof(JitSymbol) + (s.name.capacity() > 15 ? s.name.capacity() : 0) +
         s.unwinding.capacity();
}

void SymbolRanges::Insert(JitSymbol symbol) {
  // Drop what the new range overlaps: the one starting before it, if it
  // reaches in, and those starting inside it.
  auto it = by_start_.lower_bound(symbol.start);
  if (it != by_start_.begin() && std::prev(it)->second.end > symbol.start) --it;
  while (it != by_start_.end() && it->first < symbol.end) {
    bytes_ -= Cost(it->second);
    it = by_start_.erase(it);
  }
  bytes_ += Cost(symbol);
  const uint64_t start = symbol.start;
  by_start_.emplace(start, std::move(symbol));
}

void SymbolRanges::Add(JitSymbol symbol) {
  symbol.name.shrink_to_fit();
  symbol.unwinding.shrink_to_fit();
  Insert(std::move(symbol));
}

bool SymbolRanges::Move(uint64_t from, uint64_t to, uint64_t size) {
  auto it = by_start_.upper_bound(from);
  if (it == by_start_.begin() || std::prev(it)->second.end <= from) return false;
  --it;
  JitSymbol s = std::move(it->second);
  bytes_ -= Cost(s);
  by_start_.erase(it);
  s.start = to;
  s.end = to + size;
  s.cfi.reset();  // rules placed at the old address
  s.cfi_tried = false;
  Insert(std::move(s));
  return true;
}

const JitSymbol* SymbolRanges::Find(uint64_t address) const {
  auto it = by_start_.upper_bound(address);
  if (it == by_start_.begin()) return nullptr;
  --it;
  return address < it->second.end ? &it->second : nullptr;
}

Result<OwnedFile> OwnedFile::Check(int root, const std::string& path, uid_t owner,
                                   int64_t started) {
  // Opened once, checked through the descriptor and read through it: the
  // file stays readable after its process exits (and its /proc/PID/root
  // with it), and what was checked is what is read.
  Result<ScopedFd> opened = OpenBeneath(root, path, {.link_owner = owner});
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kNotFound)
      return Status::Error(StatusCode::kNotFound, path + ": not found");
    return Status::Error(StatusCode::kPermissionDenied, path + ": " + opened.status().message());
  }
  ScopedFd fd = std::move(*opened);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Status::Error(StatusCode::kNotFound, path + ": not found");
  if (st.st_uid != owner) {
    return Status::Error(StatusCode::kPermissionDenied,
                         path + ": owned by uid " + std::to_string(st.st_uid) +
                             ", not by the process's user (uid " + std::to_string(owner) + ")");
  }
  if (int64_t(st.st_mtime) < started) {
    return Status::Error(StatusCode::kPermissionDenied,
                         path + ": last written " + std::to_string(started - st.st_mtime) +
                             " s before its process started (an earlier process's)");
  }
  return OwnedFile{path, std::move(fd), uint32_t(st.st_uid)};
}

Result<std::vector<uint8_t>> OwnedFile::Read(uint64_t offset, size_t max) const {
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Status::Error(StatusCode::kNotFound, path + ": gone");
  if (st.st_uid != uid) {
    return Status::Error(
        StatusCode::kPermissionDenied,
        path + ": given to uid " + std::to_string(st.st_uid) + " since it was checked");
  }
  if (uint64_t(st.st_size) <= offset) return std::vector<uint8_t>();
  std::vector<uint8_t> buf(std::min<uint64_t>(max, uint64_t(st.st_size) - offset));
  const ssize_t n = pread(fd.get(), buf.data(), buf.size(), off_t(offset));
  if (n < 0) return Status::Error(StatusCode::kUnavailable, path + ": cannot be read");
  buf.resize(size_t(n));
  return buf;
}

Result<std::unique_ptr<PerfMap>> PerfMap::Open(int root, const std::string& path, uid_t owner,
                                               int64_t started) {
  ASSIGN_OR_RETURN(OwnedFile file, OwnedFile::Check(root, path, owner, started));
  auto map = std::make_unique<PerfMap>();
  map->file_ = std::move(file);
  return map;
}

Result<size_t> PerfMap::ReadMore() {
  if (exhausted()) return size_t(0);
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                   file_.Read(offset_, std::min(kMaxRead, size_t(kMaxTotal - offset_))));
  PerfMapLines lines = ParsePerfMapLines(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (lines.consumed == 0 && bytes.size() == kMaxRead) {
    offset_ = kMaxTotal;  // one line longer than a read: give up on the map
    return Status::Error(StatusCode::kDataLoss, file_.path + ": a line longer than " +
                                                    std::to_string(kMaxRead) + " bytes");
  }
  offset_ += lines.consumed;
  malformed_ += lines.malformed;
  const size_t added = lines.symbols.size();
  for (JitSymbol& s : lines.symbols) ranges_.Add(std::move(s));
  return added;
}

}  // namespace microscope::runtimes::jit
