// Opens a path that a profiled program chose (a mapped file's name) for
// reading, safely: never blocks on a FIFO, never takes a terminal, and
// refuses anything but a regular file.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "capture/result.h"
#include "src/util/scoped_fd.h"

namespace microscope {

inline Result<ScopedFd> OpenRegularFile(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) return Status::Error(std::string("cannot open: ") + std::strerror(errno));
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return Status::Error(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::Error("not a regular file");
  return fd;
}

}  // namespace microscope
