// Reads the source files a report's source view names (report --source,
// serve's source view), on the host that shows the report: the lines
// around the costed ones, or why they cannot be shown. A capture names
// files of the host it was recorded on, chosen by whoever built the
// profiled program (`#line 3 "/etc/shadow"`) or wrote the profile, so a
// file is opened by the file policy (base/file_policy.h), never as named:
//
// - `report` reads as the user who runs it: regular files only, links of
//   root or of that user only, at most kMaxSourceBytes.
// - `serve` (for_anyone), whose clients may be anyone on the host, shows
//   only files readable by all through directories all can search.
// - A file under a source root the person running microscope named
//   (--source-root DIR, with --trim-path PREFIX stripped from the
//   capture's path first, as pprof's -source_path and -trim_path) is read
//   with microscope's own rights, but never through a link of another
//   user, a "..", or an absolute link out of DIR.
//
// Everything else is left out with the reason ("not shown: ...").
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "analysis/report.h"
#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope::formats {

inline constexpr uint64_t kMaxSourceBytes = 8 << 20;
// Lines shown before the first costed line and after the last, and at most
// in all (a function inlined from far apart in one file shows its first
// lines).
inline constexpr uint32_t kSourceContext = 3;
inline constexpr uint32_t kMaxSourceLines = 2000;

struct SourceOptions {
  std::string root;         // --source-root: "" for none
  std::string trim;         // --trim-path: stripped from a capture's path before looking in root
  bool for_anyone = false;  // serve: outside root, only what anyone could read
};

// Opens the source files a capture names under SourceOptions' rules.
class SourceFiles {
 public:
  // Opens the source root, when one is named; an error names it.
  static Result<SourceFiles> Open(const SourceOptions& options);

  // The file a capture names as `path`, opened for reading; the error's
  // message is the reason the view shows, naming the path.
  Result<ScopedFd> OpenFile(const std::string& path) const;

 private:
  SourceFiles(SourceOptions options, ScopedFd root, uid_t root_owner);
  // `path` relative to the source root, or false when it does not map.
  bool Map(const std::string& path, std::string* relative) const;

  SourceOptions options_;
  ScopedFd root_;
  uid_t root_owner_ = 0;
};

// Opens a source file by the path a capture names (SourceFiles::OpenFile,
// or serve's broker), the error saying why not.
using SourceOpener = std::function<Result<ScopedFd>(const std::string& path)>;

// Fills each file's text (or unreadable) of `source`, through `open`.
void ReadSourceText(analysis::ReportSource* source, const SourceOpener& open);

}  // namespace microscope::formats
