// Snapshots asked for from outside a running recording (`microscope
// snapshot PID`): the recorder listens on two abstract Unix sockets, named
// for its own pid and for its target's, and each request names the file to
// write (or none: the recorder numbers one after its -o). Only root and the
// recorder's own user may ask. The answer comes once the file is written.
#pragma once

#include <sys/types.h>

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope::record {

class SnapshotServer {
 public:
  // Listens for the recorder (this process) and for `target`; a target
  // another recorder already answers for is only the recorder's (`*note`
  // says so).
  static Result<std::unique_ptr<SnapshotServer>> Listen(pid_t target, std::string* note);

  // The listening sockets, to wait on.
  std::vector<int> fds() const;

  struct Request {
    ScopedFd connection;
    std::string path;  // absolute, or empty: the recorder names the file
  };
  // Accepts the clients waiting now and reads their requests; clients
  // refused (another user, a malformed request) are answered here.
  std::vector<Request> Take();

  // The answers (for the writer's thread too): "wrote PATH: SUMMARY" or the error.
  static void Answer(int connection, const Status& status, const std::string& text);

 private:
  std::vector<ScopedFd> listening_;
  std::deque<ScopedFd> refused_;  // answered, closed at the next round
};

// The client: asks the recorder of `pid` (its own pid or its target's) for a
// snapshot written to `path` (absolute; empty: the recorder names it) and
// waits for the answer: the line the recorder wrote, or its error.
Result<std::string> RequestSnapshot(pid_t pid, const std::string& path, int timeout_ms);

}  // namespace microscope::record
