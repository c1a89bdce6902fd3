// Opens a path that a profiled program chose (a mapped file's name) for
// reading, safely: never blocks on a FIFO, never takes a terminal, and
// refuses anything but a regular file.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/scoped_fd.h"
#include "base/status.h"

namespace microscope {

inline Result<ScopedFd> OpenRegularFile(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd.valid()) {
    return Status::Error(CodeOfErrno(errno), std::string("cannot open: ") + std::strerror(errno));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return Status::Error(std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return Status::Error(StatusCode::kInvalidArgument, "not a regular file");
  return fd;
}

// The whole of a regular file, read in one go (at most `limit` bytes).
inline Result<std::vector<uint8_t>> ReadRegularFile(const std::string& path,
                                                    uint64_t limit = uint64_t(1) << 32) {
  ASSIGN_OR_RETURN(ScopedFd fd, OpenRegularFile(path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0)
    return Status::Error(std::string("cannot stat: ") + std::strerror(errno));
  if (uint64_t(st.st_size) > limit) return Status::Error("larger than " + std::to_string(limit));
  std::vector<uint8_t> bytes(size_t(st.st_size));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = read(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error(std::string("cannot read: ") + std::strerror(errno));
    if (n == 0) break;  // the file shrank: what was read is all there is
    done += size_t(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace microscope
