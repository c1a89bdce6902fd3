// Ways into the file systems processes see. A program in another mount
// namespace (every container) maps files whose recorded paths name nothing,
// or another file, on this host; the kernel lets us reach its view through
// /proc/PID/root. One O_PATH fd is kept per distinct root (by its mount
// namespace and the root's device and inode: `unshare -m` keeps the host's
// root directory but mounts its own files under it), opened when a
// process's first file mapping after exec is processed, so it stays usable
// after the process exits, with an fd on its mount namespace: when the
// namespace's last process exits, the kernel takes down the namespace's
// mounts (a container's tmpfs or overlay) unless something holds it; the
// root fd alone would still lead to the directory they covered. The root
// is the one the process has then, not at the mapping's time: every file
// read through it is proved by build ID.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/scoped_fd.h"

namespace microscope::record {

class ProcessRoots {
 public:
  static constexpr uint32_t kHostRoot = ~0u;  // our own root: paths as recorded

  ProcessRoots();

  // The root process `pid` sees now: kHostRoot when it is ours or cannot be
  // opened (the process is gone), else an index for PathIn.
  uint32_t Open(pid_t pid);
  // `path` (as the target sees it) reached through root `root`.
  std::string PathIn(uint32_t root, const std::string& path) const;

 private:
  struct Key {
    ino_t mnt_ns = 0;
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const Key&) const = default;
  };
  struct Root {
    ScopedFd fd;
    ScopedFd mnt_ns;  // keeps the namespace's mounts for reads through fd
    Key key;
  };
  Key own_;
  std::vector<Root> roots_;
};

}  // namespace microscope::record
