#include "src/record/process_roots.h"

#include <fcntl.h>
#include <sys/stat.h>

namespace microscope::record {

ProcessRoots::ProcessRoots() {
  struct stat ns, st;
  if (stat("/proc/self/ns/mnt", &ns) == 0 && stat("/", &st) == 0) {
    own_ = Key{ns.st_ino, st.st_dev, st.st_ino};
  }
}

uint32_t ProcessRoots::Open(pid_t pid) {
  std::string proc = "/proc/" + std::to_string(pid);
  ScopedFd mnt_ns(open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  ScopedFd fd(open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  struct stat ns, st;
  if (!fd.valid() || !mnt_ns.valid() || fstat(fd.get(), &st) != 0 ||
      fstat(mnt_ns.get(), &ns) != 0) {
    return kHostRoot;
  }
  Key key{ns.st_ino, st.st_dev, st.st_ino};
  if (key == own_) return kHostRoot;
  for (size_t i = 0; i < roots_.size(); ++i) {
    if (roots_[i].key == key) return uint32_t(i);
  }
  roots_.push_back(Root{std::move(fd), std::move(mnt_ns), key});
  return uint32_t(roots_.size() - 1);
}

std::string ProcessRoots::PathIn(uint32_t root, const std::string& path) const {
  if (root >= roots_.size()) return path;
  // The recorded path is the kernel's d_path from the target's root: no
  // symlinks left in it to resolve against ours.
  return "/proc/self/fd/" + std::to_string(roots_[root].fd.get()) + path;
}

}  // namespace microscope::record
