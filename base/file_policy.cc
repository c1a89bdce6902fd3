#include "base/file_policy.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <random>

namespace microscope {
namespace {

constexpr int kMaxLinks = 32;

Status Errno(const std::string& what) {
  const int err = errno;
  return Status::Error(CodeOfErrno(err), what + ": " + std::strerror(err));
}

Status Refused(const std::string& what) {
  return Status::Error(StatusCode::kPermissionDenied, what);
}

// Appends the components of `path` to the front of `rest`, in order.
void PushFront(std::deque<std::string>* rest, std::string_view path) {
  std::vector<std::string> parts;
  size_t at = 0;
  while (at <= path.size()) {
    size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > at) parts.emplace_back(path.substr(at, slash - at));
    at = slash + 1;
  }
  rest->insert(rest->begin(), parts.begin(), parts.end());
}

std::string Uid(uid_t uid) {
  return "uid " + std::to_string(uid);
}

// Whether the link `where` (lstat `link`, in the directory `dir`) may be
// followed under `policy`.
Status TrustLink(const std::string& where, const struct stat& link, const struct stat& dir,
                 const FilePolicy& policy) {
  if (!policy.follow_links) return Refused(where + " is a symbolic link");
  auto trusted = [&](uid_t uid) {
    return uid == 0 || (policy.link_owner && uid == *policy.link_owner);
  };
  if (!trusted(link.st_uid)) {
    return Refused(where + " is a symbolic link of " + Uid(link.st_uid) + ", not root's" +
                   (policy.link_owner && *policy.link_owner != 0
                        ? " or " + Uid(*policy.link_owner) + "'s"
                        : ""));
  }
  if (!trusted(dir.st_uid) || (dir.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Refused(where + " is a symbolic link in a directory others can write");
  }
  return OkStatus();
}

// `fd` (opened with O_PATH from `dir` as `name`, lstat `st`) opened again
// for reading, and held to be the very file checked.
Result<ScopedFd> Reopen(int dir, const std::string& name, const struct stat& st,
                        const std::string& at) {
  ScopedFd file(
      openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!file.valid()) return Errno("cannot open " + at);
  struct stat fs;
  if (fstat(file.get(), &fs) != 0) return Errno("cannot stat " + at);
  if (fs.st_dev != st.st_dev || fs.st_ino != st.st_ino)
    return Refused(at + " changed while it was opened");
  return file;
}

}  // namespace

bool IsEntryName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

Result<ScopedFd> OpenUntrusted(const std::string& path, const FilePolicy& policy) {
  if (path.empty() || path[0] != '/') {
    return Status::Error(StatusCode::kInvalidArgument, "not an absolute path");
  }
  if (path.find('\0') != std::string::npos) {
    return Status::Error(StatusCode::kInvalidArgument, "a NUL in the path");
  }
  ScopedFd dir(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir.valid()) return Errno("cannot open /");
  std::string at = "";  // the part resolved so far, for messages
  std::deque<std::string> rest;
  PushFront(&rest, path);
  int links = 0;
  while (!rest.empty()) {
    const std::string part = std::move(rest.front());
    rest.pop_front();
    if (part == ".") continue;
    struct stat ds;
    if (fstat(dir.get(), &ds) != 0) return Errno("cannot stat " + (at.empty() ? "/" : at));
    if (policy.world_readable && !(ds.st_mode & S_IXOTH)) {
      return Refused("not shown: " + (at.empty() ? "/" : at) + " is not searchable by all");
    }
    ScopedFd next(openat(dir.get(), part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return Errno("cannot open " + at + "/" + part);
    struct stat st;
    if (fstat(next.get(), &st) != 0) return Errno("cannot stat " + at + "/" + part);
    if (S_ISLNK(st.st_mode)) {
      const std::string where = at + "/" + part;
      RETURN_IF_ERROR(TrustLink(where, st, ds, policy));
      if (++links > kMaxLinks) return Refused("more than 32 symbolic links");
      char target[PATH_MAX];
      ssize_t n = readlinkat(next.get(), "", target, sizeof(target));
      if (n <= 0 || size_t(n) >= sizeof(target)) return Errno("cannot read the link " + where);
      std::string_view to(target, size_t(n));
      PushFront(&rest, to);
      if (to.front() == '/') {
        dir = ScopedFd(open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
        if (!dir.valid()) return Errno("cannot open /");
        at = "";
      }
      continue;
    }
    if (part == "..") {
      // Stays inside what was resolved: ".." of a directory is its parent.
      size_t slash = at.rfind('/');
      at = slash == std::string::npos ? "" : at.substr(0, slash);
    } else {
      at += "/" + part;
    }
    if (!rest.empty()) {
      if (!S_ISDIR(st.st_mode))
        return Status::Error(StatusCode::kNotFound, at + " is not a directory");
      dir = std::move(next);
      continue;
    }
    if (!S_ISREG(st.st_mode)) return Refused(at + " is not a regular file");
    if (policy.owner && st.st_uid != *policy.owner) {
      return Refused(at + " is owned by " + Uid(st.st_uid) + ", not " + Uid(*policy.owner));
    }
    if (policy.world_readable && !(st.st_mode & S_IROTH)) {
      return Refused("not shown: " + at + " is not readable by all");
    }
    return Reopen(dir.get(), part, st, at);
  }
  return Status::Error(StatusCode::kInvalidArgument, "names a directory, not a file");
}

Result<ScopedFd> OpenBeneath(int root, const std::string& relative, const FilePolicy& policy) {
  if (relative.find('\0') != std::string::npos) {
    return Status::Error(StatusCode::kInvalidArgument, "a NUL in the path");
  }
  // The directories from `root` down to the one being read: ".." pops one,
  // so nothing above `root` is ever opened.
  std::vector<ScopedFd> dirs;
  dirs.emplace_back(openat(root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dirs.back().valid()) return Errno("cannot open the root directory");
  std::vector<std::string> names;  // below root, for messages
  auto here = [&] {
    std::string at;
    for (const std::string& n : names) at += (at.empty() ? "" : "/") + n;
    return at;
  };
  std::deque<std::string> rest;
  PushFront(&rest, relative);
  int links = 0;
  while (!rest.empty()) {
    const std::string part = std::move(rest.front());
    rest.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      if (names.empty()) return Refused("'..' leaves the directory");
      dirs.pop_back();
      names.pop_back();
      continue;
    }
    const int dir = dirs.back().get();
    const std::string where = here() + (names.empty() ? "" : "/") + part;
    struct stat st, ds;
    if (fstat(dir, &ds) != 0) return Errno("cannot stat " + (names.empty() ? "/" : here()));
    if (policy.world_readable && !(ds.st_mode & S_IXOTH)) {
      return Refused("not shown: " + (names.empty() ? "/" : here()) + " is not searchable by all");
    }
    ScopedFd next(openat(dir, part.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!next.valid()) return Errno("cannot open " + where);
    if (fstat(next.get(), &st) != 0) return Errno("cannot stat " + where);
    if (S_ISLNK(st.st_mode)) {
      RETURN_IF_ERROR(TrustLink(where, st, ds, policy));
      if (++links > kMaxLinks) return Refused("more than 32 symbolic links");
      char target[PATH_MAX];
      ssize_t n = readlinkat(next.get(), "", target, sizeof(target));
      if (n <= 0 || size_t(n) >= sizeof(target)) return Errno("cannot read the link " + where);
      std::string_view to(target, size_t(n));
      if (to.front() == '/') return Refused(where + " is a symbolic link to an absolute path");
      PushFront(&rest, to);
      continue;
    }
    if (!rest.empty()) {
      if (!S_ISDIR(st.st_mode))
        return Status::Error(StatusCode::kNotFound, where + " is not a directory");
      dirs.push_back(std::move(next));
      names.push_back(part);
      continue;
    }
    if (!S_ISREG(st.st_mode)) return Refused(where + " is not a regular file");
    if (policy.owner && st.st_uid != *policy.owner) {
      return Refused(where + " is owned by " + Uid(st.st_uid) + ", not " + Uid(*policy.owner));
    }
    if (policy.world_readable && !(st.st_mode & S_IROTH)) {
      return Refused("not shown: " + where + " is not readable by all");
    }
    return Reopen(dir, part, st, where);
  }
  return Status::Error(StatusCode::kInvalidArgument, "names a directory, not a file");
}

Result<ScopedFd> OpenEntry(int dir, std::string_view name, std::optional<uid_t> owner) {
  const std::string n(name);
  if (!IsEntryName(name))
    return Status::Error(StatusCode::kInvalidArgument, "not a file name: " + n);
  // Looked at before it is opened for reading: opening a device or a FIFO
  // can itself act (a tape rewinds, a FIFO's writer is released).
  struct stat st;
  if (fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return Errno("cannot stat " + n);
  if (S_ISLNK(st.st_mode)) return Refused(n + " is a symbolic link");
  if (!S_ISREG(st.st_mode)) return Refused(n + " is not a regular file");
  if (owner && st.st_uid != *owner) {
    return Refused(n + " is owned by " + Uid(st.st_uid) + ", not " + Uid(*owner));
  }
  return Reopen(dir, n, st, n);
}

std::vector<std::string> EntryNames(int dir) {
  std::vector<std::string> names;
  DIR* d = fdopendir(dup(dir));
  if (d == nullptr) return names;
  rewinddir(d);  // the duplicate shares the offset with `dir`
  while (dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") names.emplace_back(n);
  }
  closedir(d);
  return names;
}

std::optional<struct stat> StatEntry(int dir, std::string_view name) {
  if (!IsEntryName(name)) return std::nullopt;
  struct stat st;
  if (fstatat(dir, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return std::nullopt;
  return st;
}

Result<ScopedFd> OpenOwnDirectory(int parent, std::string_view name, mode_t mode) {
  const std::string n(name);
  if (!IsEntryName(name))
    return Status::Error(StatusCode::kInvalidArgument, "not a directory name: " + n);
  if (mkdirat(parent, n.c_str(), mode) != 0 && errno != EEXIST) return Errno("cannot create " + n);
  ScopedFd fd(openat(parent, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ELOOP || errno == ENOTDIR) {
      return Refused(n + " is not a directory (a symbolic link or a file someone put there)");
    }
    return Errno("cannot open " + n);
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Errno("cannot stat " + n);
  if (st.st_uid != geteuid()) {
    return Refused(n + " is owned by " + Uid(st.st_uid) + ", not by this recorder's " +
                   Uid(geteuid()));
  }
  if ((st.st_mode & 07777) != mode && fchmod(fd.get(), mode) != 0)
    return Errno("cannot set the mode of " + n);
  return fd;
}

Result<ScopedFd> OpenDirectory(const std::string& path) {
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return Errno("cannot open the directory");
  return fd;
}

Result<std::vector<uint8_t>> ReadWhole(int fd, uint64_t limit) {
  std::vector<uint8_t> out;
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    if (uint64_t(st.st_size) > limit) {
      return Status::Error(StatusCode::kDataLoss,
                           "larger than " + std::to_string(limit) + " bytes");
    }
    out.reserve(size_t(st.st_size));
  }
  uint8_t buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot read");
    if (n == 0) break;
    if (out.size() + size_t(n) > limit) {
      return Status::Error(StatusCode::kDataLoss,
                           "larger than " + std::to_string(limit) + " bytes");
    }
    out.insert(out.end(), buffer, buffer + n);
  }
  return out;
}

Status WriteEntryAtomically(int dir, std::string_view name, std::span<const uint8_t> bytes,
                            mode_t mode) {
  const std::string n(name);
  if (!IsEntryName(name))
    return Status::Error(StatusCode::kInvalidArgument, "not a file name: " + n);
  std::random_device random;
  std::string temp;
  ScopedFd fd;
  for (int attempt = 0; attempt < 16 && !fd.valid(); ++attempt) {
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), ".tmp.%08x", unsigned(random()));
    temp = n + suffix;
    fd = ScopedFd(
        openat(dir, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (!fd.valid() && errno != EEXIST) return Errno("cannot create " + temp);
  }
  if (!fd.valid()) return Status::Error("cannot create a temporary for " + n);
  auto fail = [&](const std::string& what) {
    Status s = Errno(what);
    unlinkat(dir, temp.c_str(), 0);
    return s;
  };
  if (fchmod(fd.get(), mode) != 0) return fail("cannot set the mode of " + temp);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return fail("cannot write " + temp);
    done += size_t(w);
  }
  if (fsync(fd.get()) != 0) return fail("cannot sync " + temp);
  if (renameat(dir, temp.c_str(), dir, n.c_str()) != 0) return fail("cannot rename to " + n);
  fsync(dir);
  return OkStatus();
}

}  // namespace microscope
