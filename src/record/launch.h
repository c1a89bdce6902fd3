// A program launched for recording: forked, held at a gate until the
// recorder's events are open on it, then exec'd. The child owns nothing of
// ours; this object owns the gate and the exec-error channel. A child never
// released is cancelled (it exits without running the program) and reaped.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope::record {

class LaunchedChild {
 public:
  // `environment`: NAME=VALUE entries set in the program's environment
  // (over ours).
  static Result<std::unique_ptr<LaunchedChild>> Fork(
      const std::vector<std::string>& command, const std::vector<std::string>& environment = {});
  ~LaunchedChild();
  LaunchedChild(const LaunchedChild&) = delete;
  LaunchedChild& operator=(const LaunchedChild&) = delete;

  pid_t pid() const { return pid_; }
  // Opens the gate. An exec that failed is an error (the child is reaped).
  Status Release();
  // True once the program has ended; its wait status in `*wait_status`.
  bool Exited(int* wait_status);
  // Waits for the program's end; its wait status.
  int Wait();

 private:
  LaunchedChild(pid_t pid, ScopedFd gate, ScopedFd exec_error, std::string program)
      : pid_(pid),
        gate_(std::move(gate)),
        exec_error_(std::move(exec_error)),
        program_(std::move(program)) {}

  pid_t pid_;
  ScopedFd gate_;        // our end; closed unopened: the child cancels
  ScopedFd exec_error_;  // the child's errno when exec fails; EOF when exec succeeds
  std::string program_;
  bool released_ = false;
  bool reaped_ = false;
  int wait_status_ = 0;
};

// A wait status as a shell reports it (exit code, or 128 + signal).
int ExitStatusForShell(int wait_status);

}  // namespace microscope::record
