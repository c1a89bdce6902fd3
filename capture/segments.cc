#include "capture/segments.h"

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/clock.h"
#include "base/file_policy.h"
#include "capture/reader.h"
#include "capture/window.h"

namespace microscope::capture {
namespace {

constexpr std::string_view kPrefix = "microscope-";
constexpr std::string_view kSuffix = ".mscap";

bool Digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The pid field of a segment name.
int PidOf(std::string_view name) {
  // microscope-YYYYMMDDTHHMMSS.mmmZ-PID-SEQ.mscap
  std::string_view rest = name.substr(kPrefix.size() + 21);  // after "...Z-"
  size_t dash = rest.find('-');
  if (dash == std::string_view::npos) return 0;
  return std::atoi(std::string(rest.substr(0, dash)).c_str());
}

}  // namespace

std::string SegmentName(uint64_t realtime_ns, int pid, uint64_t sequence) {
  return std::string(kPrefix) + UtcText(realtime_ns, UtcStyle::kCompact) + "-" +
         std::to_string(pid) + "-" + std::to_string(sequence) + std::string(kSuffix);
}

bool IsSegmentName(std::string_view name) {
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return false;
  std::string_view mid = name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  // YYYYMMDDTHHMMSS.mmmZ-PID-SEQ
  if (mid.size() < 24 || mid[8] != 'T' || mid[15] != '.' || mid[19] != 'Z' || mid[20] != '-')
    return false;
  if (!Digits(mid.substr(0, 8)) || !Digits(mid.substr(9, 6)) || !Digits(mid.substr(16, 3)))
    return false;
  std::string_view rest = mid.substr(21);
  size_t dash = rest.find('-');
  return dash != std::string_view::npos && Digits(rest.substr(0, dash)) &&
         Digits(rest.substr(dash + 1));
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

namespace {

// Whether a segment owned by `uid` in the directory `dir` (its stat) is
// one a recorder wrote there, not one another user planted in a directory
// others can write: the directory's owner's, root's, or this process's
// user's.
bool TrustedOwner(const struct stat& dir, uid_t uid) {
  return uid == dir.st_uid || uid == 0 || uid == geteuid();
}

// The segments of the open directory `dir`, oldest first: regular files
// only, a symbolic link never followed, owned by `owner` when given, else
// by a trusted owner (above).
std::vector<SegmentFile> ListIn(int dir, std::optional<uid_t> owner) {
  std::vector<SegmentFile> out;
  struct stat ds;
  if (fstat(dir, &ds) != 0) return out;
  for (const std::string& name : EntryNames(dir)) {
    if (!IsSegmentName(name)) continue;
    std::optional<struct stat> st = StatEntry(dir, name);
    if (!st || !S_ISREG(st->st_mode)) continue;  // gone, or not a file the recorder wrote
    if (owner ? st->st_uid != *owner : !TrustedOwner(ds, st->st_uid)) continue;
    out.push_back({name, uint64_t(st->st_size),
                   uint64_t(st->st_mtim.tv_sec) * 1'000'000'000 + uint64_t(st->st_mtim.tv_nsec)});
  }
  // Names sort by start; one recorder's segments of the same millisecond by
  // sequence number (compared as a number).
  auto key = [](const SegmentFile& f) {
    std::string_view n = f.name;
    size_t last = n.rfind('-');
    return std::make_pair(std::string(n.substr(0, last)),
                          std::strtoull(std::string(n.substr(last + 1)).c_str(), nullptr, 10));
  };
  std::sort(out.begin(), out.end(),
            [&](const SegmentFile& a, const SegmentFile& b) { return key(a) < key(b); });
  return out;
}

Result<ScopedFd> OpenSegmentDirectory(const std::string& dir) {
  Result<ScopedFd> fd = OpenDirectory(dir);
  if (!fd.ok()) return fd.status().WithContext(dir);
  return fd;
}

}  // namespace

Result<ScopedFd> OpenSegment(int dir, const std::string& name) {
  if (!IsSegmentName(name)) {
    return Status::Error(StatusCode::kInvalidArgument, "not a segment's name: " + name);
  }
  struct stat ds;
  if (fstat(dir, &ds) != 0) return Status::Error(StatusCode::kNotFound, "directory gone");
  ASSIGN_OR_RETURN(ScopedFd fd, OpenEntry(dir, name));
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !TrustedOwner(ds, st.st_uid)) {
    return Status::Error(StatusCode::kPermissionDenied,
                         name + " is owned by uid " + std::to_string(st.st_uid) +
                             ", neither the directory's owner, root nor this user");
  }
  return fd;
}

Result<std::vector<SegmentFile>> ListSegments(const std::string& dir, std::optional<uid_t> owner) {
  ASSIGN_OR_RETURN(ScopedFd fd, OpenSegmentDirectory(dir));
  return ListIn(fd.get(), owner);
}

std::vector<std::string> ApplyRetention(const std::string& dir, uint64_t retain_ns,
                                        uint64_t retain_bytes, uint64_t now_realtime_ns) {
  std::vector<std::string> deleted;
  Result<ScopedFd> fd = OpenSegmentDirectory(dir);
  if (!fd.ok()) return deleted;
  // Only this recorder's user's own files count: a name planted by another
  // user (a link to a big file, a file of theirs) neither counts nor goes.
  std::vector<SegmentFile> files = ListIn(fd->get(), geteuid());
  uint64_t total = 0;
  for (const SegmentFile& f : files) total += f.bytes;
  // The newest segment stays whatever the limits say: it is the latest
  // profile there is, and a writer just published it.
  for (size_t i = 0; i + 1 < files.size(); ++i) {
    const SegmentFile& f = files[i];
    const bool too_old = retain_ns != 0 && f.mtime_ns + retain_ns < now_realtime_ns;
    const bool too_big = retain_bytes != 0 && total > retain_bytes;
    if (!too_old && !too_big) break;
    if (unlinkat(fd->get(), f.name.c_str(), 0) == 0 || errno == ENOENT) {
      total -= f.bytes;
      deleted.push_back(f.name);
    }
  }
  return deleted;
}

size_t RemoveStaleTemporaries(const std::string& dir) {
  Result<ScopedFd> fd = OpenSegmentDirectory(dir);
  if (!fd.ok()) return 0;
  std::vector<std::string> stale;
  for (const std::string& entry : EntryNames(fd->get())) {
    std::string_view name = entry;
    size_t tmp = name.find(".mscap.tmp.");
    if (tmp == std::string_view::npos) continue;
    std::string_view segment = name.substr(0, tmp + kSuffix.size());
    if (!IsSegmentName(segment)) continue;
    std::optional<struct stat> st = StatEntry(fd->get(), name);
    if (!st || !S_ISREG(st->st_mode) || st->st_uid != geteuid()) continue;  // not one of ours
    const int pid = PidOf(segment);
    if (pid > 0 && (kill(pid, 0) == 0 || errno == EPERM)) continue;  // its writer may be alive
    stale.emplace_back(name);
  }
  size_t removed = 0;
  for (const std::string& name : stale) removed += unlinkat(fd->get(), name.c_str(), 0) == 0;
  return removed;
}

Result<DirectoryCapture> ReadSegmentDirectory(const std::string& dir) {
  ASSIGN_OR_RETURN(ScopedFd fd, OpenSegmentDirectory(dir));
  const int at = fd.get();
  return ReadSegmentsFrom(
      dir, {.list = [at]() -> Result<std::vector<SegmentFile>> { return ListIn(at, std::nullopt); },
            .open = [at](const std::string& name) { return OpenSegment(at, name); }});
}

Result<DirectoryCapture> ReadSegmentsFrom(const std::string& dir, const SegmentSource& source) {
  Result<std::vector<SegmentFile>> listed = source.list();
  if (!listed.ok()) return listed.status().WithContext(dir);
  const std::vector<SegmentFile>& files = *listed;
  DirectoryCapture out;
  std::vector<Capture> parts;
  size_t vanished = 0;
  for (const SegmentFile& f : files) {
    Result<ScopedFd> file = source.open(f.name);
    if (!file.ok() && file.status().code() == StatusCode::kNotFound) {
      ++vanished;  // retention deleted it meanwhile
      continue;
    }
    Result<Capture> c = file.ok() ? ReadCaptureFrom(file->get()) : Result<Capture>(file.status());
    if (!c.ok()) {
      out.notes.push_back(f.name + " left out: " + c.status().message());
      continue;
    }
    parts.push_back(std::move(c).value());
  }
  if (vanished > 0) {
    out.notes.push_back(std::to_string(vanished) + " segment" + (vanished == 1 ? "" : "s") +
                        " deleted by retention while the directory was read");
  }
  // The monotonic clock restarts at each boot: only the newest boot's
  // segments share one time line.
  if (!parts.empty()) {
    const std::string boot = parts.back().settings.boot_id;
    size_t other = 0;
    std::vector<Capture> same;
    for (Capture& p : parts) {
      if (p.settings.boot_id == boot) {
        same.push_back(std::move(p));
      } else {
        ++other;
      }
    }
    if (other > 0) {
      out.notes.push_back(std::to_string(other) + " segment" + (other == 1 ? "" : "s") +
                          " of an earlier boot left out (the clock restarted at boot)");
    }
    parts = std::move(same);
  }
  if (parts.empty()) {
    return Status::Error(files.empty() ? "not a regular file, and no segments (microscope-*.mscap) "
                                         "in the directory"
                                       : "no segment in the directory could be read")
        .WithContext(dir);
  }
  // Parts in time order: names sort by wall clock, which may step.
  std::stable_sort(parts.begin(), parts.end(), [](const Capture& a, const Capture& b) {
    return a.settings.start_time < b.settings.start_time;
  });
  out.segments = parts.size();
  // A segment missing between two of one recording (left out above, or
  // deleted by hand): a gap from the one before's end to the next's start.
  std::vector<Gap> missing;
  for (size_t i = 1; i < parts.size(); ++i) {
    const Settings& a = parts[i - 1].settings;
    const Settings& b = parts[i].settings;
    if (a.recording_id.empty() || a.recording_id != b.recording_id) continue;
    if (b.part_index > a.part_index + 1 && b.start_time >= a.end_time) {
      missing.push_back({.begin = a.end_time,
                         .end = b.start_time,
                         .cause = GapCause::kSegmentMissing,
                         .count = b.part_index - a.part_index - 1});
    }
  }
  out.capture = MergeCaptures(std::move(parts));
  if (!missing.empty()) {
    for (const Gap& g : missing) out.capture.gaps.push_back(g);
    SortGaps(&out.capture.gaps);
  }
  out.capture.settings.part = "segments";
  out.capture.settings.part_index = out.segments;
  for (const std::string& note : out.notes) out.capture.settings.notes.push_back(note);
  return out;
}

}  // namespace microscope::capture

namespace microscope::capture {

Result<Capture> ReadCaptureOrSegments(const std::string& path) {
  if (IsDirectory(path)) {
    ASSIGN_OR_RETURN(DirectoryCapture d, ReadSegmentDirectory(path));
    return std::move(d.capture);
  }
  Result<Capture> c = ReadCapture(path);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

std::string SegmentListing(const std::string& path) {
  if (!IsDirectory(path)) return "";
  Result<std::vector<SegmentFile>> files = ListSegments(path);
  std::string out;
  if (files.ok()) {
    for (const SegmentFile& f : *files) out += f.name + "\n";
  }
  return out;
}

}  // namespace microscope::capture
