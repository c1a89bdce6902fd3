// The directory of a continuous recording (record --continuous DIR): one
// complete capture per segment, named
//   microscope-YYYYMMDDTHHMMSS.mmmZ-PID-SEQ.mscap
// (the segment's wall-clock start in UTC, the recorder's pid, its sequence
// number from 1), published by rename so that a name of this form is only
// ever a complete file. Writers keep to the naming and retention; readers
// take every segment there is as one profile.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"
#include "capture/capture.h"

namespace microscope::capture {

std::string SegmentName(uint64_t realtime_ns, int pid, uint64_t sequence);
// Whether `name` (a file name, no directory) has the form SegmentName gives.
bool IsSegmentName(std::string_view name);

struct SegmentFile {
  std::string name;  // in the directory
  uint64_t bytes = 0;
  uint64_t mtime_ns = 0;  // wall clock: when it was published
};
// The segments in `dir`, oldest first (names sort by their start): regular
// files with a segment's name, never a symbolic link, and owned by `owner`
// when given; otherwise by the directory's owner, root or this process's
// user (never a file another user planted in a directory others can write).
Result<std::vector<SegmentFile>> ListSegments(const std::string& dir,
                                              std::optional<uid_t> owner = std::nullopt);
// The segment `name` of the open directory `dir` for reading, under the
// rules ListSegments lists by (a link or another user's file refused).
Result<ScopedFd> OpenSegment(int dir, const std::string& name);

// Deletes segments of `dir`, oldest first, while one was published more
// than `retain_ns` before `now_realtime_ns` (0: no age limit) or they take
// more than `retain_bytes` together (0: no size limit); the newest stays
// whatever the limits. Only regular files of this process's user count
// (lstat: a link is never followed for type or size); files of any other
// name or owner are never touched.
// Returns the names deleted.
std::vector<std::string> ApplyRetention(const std::string& dir, uint64_t retain_ns,
                                        uint64_t retain_bytes, uint64_t now_realtime_ns);

// Deletes the temporaries (NAME.tmp.XXXXXX) that a recorder killed while
// writing a segment left (this process's user's, never a link), when no
// process has the pid in NAME any more.
// Returns how many.
size_t RemoveStaleTemporaries(const std::string& dir);

// Every segment of `dir` read as one capture (MergeCaptures). A segment deleted while the directory
// is read (retention) is passed over; one that cannot be read is left out with a note naming it;
// segments of an earlier boot than the newest are left out with a note (their clock restarted). An
// error when no segment is left.
struct DirectoryCapture {
  Capture capture;
  size_t segments = 0;
  std::vector<std::string> notes;  // what was left out, and why
};
Result<DirectoryCapture> ReadSegmentDirectory(const std::string& dir);

// The same through another's hands: `list` gives the directory's segments
// (as ListSegments), `open` opens one by its name (a regular file, never a
// link). serve's broker opens them for a server without the rights to.
// `dir` names the directory in errors.
struct SegmentSource {
  std::function<Result<std::vector<SegmentFile>>()> list;
  std::function<Result<ScopedFd>(const std::string& name)> open;
};
Result<DirectoryCapture> ReadSegmentsFrom(const std::string& dir, const SegmentSource& source);

// Whether `path` names a directory (report DIR and the other readers).
bool IsDirectory(const std::string& path);

// A capture file, or a directory of segments read as one (what was left
// out is in the capture's notes). Errors name the path.
Result<Capture> ReadCaptureOrSegments(const std::string& path);
// The segment names of a directory, one string, to see it change; empty for
// a file.
std::string SegmentListing(const std::string& path);

}  // namespace microscope::capture
