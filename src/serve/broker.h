// What `serve` reads from the file system, behind one interface, so that a
// serve started as root answers HTTP without root's rights (as sshd
// separates privileges; docs/security.md):
//
// - Before any thread starts, SeparatePrivileges forks. The parent stays
//   root as a small broker that opens only what is served: each named
//   capture file, each served --continuous directory's segment listing and
//   its segments (segment names, regular files, no links:
//   capture/segments.h), and source files under the source view's rules
//   (formats/source_text.h); it passes descriptors back (SCM_RIGHTS) or
//   listings (broker_wire.h). It exits when the child does, with the
//   child's status; SIGINT and SIGTERM to it stop the child.
// - The child sets PR_SET_NO_NEW_PRIVS, drops its groups, then takes the
//   unprivileged user's gid and uid (nobody, or --user), and runs the
//   server, reading captures through the descriptors it is given.
//
// A serve that is not root uses a DirectBroker in its own process: the same
// calls, the same rules.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"
#include "capture/capture.h"
#include "capture/segments.h"
#include "formats/source_text.h"

namespace microscope::serve {

// A capture served: its name (the path's base name), its path, and
// whether it is a --continuous directory of segments.
struct ServedCapture {
  std::string name;
  std::string path;
  bool directory = false;
};

// The most captures a served directory lists: files past it (a directory
// others fill without end) are counted, not served.
inline constexpr size_t kMaxServedCaptures = 10000;

class Broker {
 public:
  virtual ~Broker() = default;

  // The served capture `name`, if it is one. Safe beside ListCaptures.
  std::optional<ServedCapture> Find(const std::string& name) const;
  std::map<std::string, ServedCapture> served() const;
  // The directory of captures served (serve DIR), or empty.
  const std::string& directory() const { return directory_; }

  // The capture files in the served directory now (name, bytes), sorted:
  // its regular *.mscap files, and links named so (opening one applies the
  // file policy); each is served from then on. At most kMaxServedCaptures;
  // `*left_out` counts the rest. An error when no directory is served.
  virtual Result<std::vector<capture::SegmentFile>> ListCaptures(size_t* left_out) = 0;

  // The capture file served as `name`, opened.
  virtual Result<ScopedFd> OpenCapture(const std::string& name) = 0;
  // The segments of the directory served as `name`, oldest first.
  virtual Result<std::vector<capture::SegmentFile>> ListSegments(const std::string& name) = 0;
  // The segment `entry` of the directory served as `name`, opened.
  virtual Result<ScopedFd> OpenSegment(const std::string& name, const std::string& entry) = 0;
  // A source file a capture names, opened under the source view's rules;
  // the error is the reason the view shows.
  virtual Result<ScopedFd> OpenSource(const std::string& path) = 0;

 protected:
  Broker(std::map<std::string, ServedCapture> served, std::string directory)
      : directory_(std::move(directory)), served_(std::move(served)) {}
  // Serves the files `listed` in the directory from now on (a name already
  // served as a directory of segments stays that).
  void AddListed(const std::vector<capture::SegmentFile>& listed);

 private:
  const std::string directory_;
  mutable std::mutex mutex_;  // guards served_
  std::map<std::string, ServedCapture> served_;
};

// Opens in this process.
class DirectBroker : public Broker {
 public:
  // `captures`: the paths CapturesToServe gave (unique base names);
  // `source`: the source view's options (for_anyone is set here);
  // `directory`: the directory they came from, listed again by
  // ListCaptures (empty: none).
  static Result<std::unique_ptr<DirectBroker>> Open(const std::vector<std::string>& captures,
                                                    const formats::SourceOptions& source,
                                                    const std::string& directory = "");

  Result<std::vector<capture::SegmentFile>> ListCaptures(size_t* left_out) override;
  Result<ScopedFd> OpenCapture(const std::string& name) override;
  Result<std::vector<capture::SegmentFile>> ListSegments(const std::string& name) override;
  Result<ScopedFd> OpenSegment(const std::string& name, const std::string& entry) override;
  Result<ScopedFd> OpenSource(const std::string& path) override;

 private:
  DirectBroker(std::map<std::string, ServedCapture> served, std::string directory,
               formats::SourceFiles sources)
      : Broker(std::move(served), std::move(directory)), sources_(std::move(sources)) {}
  formats::SourceFiles sources_;
};

// When this process is root: forks the broker. In the child, returns the
// broker it asks (over a socket), running as `user` (empty: nobody), after
// calling `before_drop` (if any) while still root; the parent closes
// `child_only_fd` (the server's listening socket; -1: none), serves the
// child's requests through `direct` and exits with the child's status (it
// never returns). An error, before forking, when `user` does not exist.
// Call it before any thread starts.
Result<std::unique_ptr<Broker>> SeparatePrivileges(std::unique_ptr<DirectBroker> direct,
                                                   const std::string& user, int child_only_fd = -1,
                                                   const std::function<void()>& before_drop = {});

// The capture served as `name` (a known one), read through `broker`:
// a file, or a directory's segments as one (capture::ReadSegmentsFrom).
// Errors name its path.
Result<capture::Capture> ReadServed(Broker& broker, const std::string& name);
// The segment names of a served directory, one string, to see it change;
// empty for a file.
std::string ServedListing(Broker& broker, const std::string& name);
// The bytes of a served capture (a directory: its segments'); 0 when it
// cannot be opened.
uint64_t ServedBytes(Broker& broker, const std::string& name);

}  // namespace microscope::serve
