#include "capture/container.h"

#include "base/file_policy.h"
#include "base/open_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

namespace microscope::capture {
namespace {

std::string Errno(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// "No space left on device (N bytes needed, M available)" for a write of
// `needed` bytes into `dir` that failed with `err` (called once the
// temporary is gone, so that its blocks count as available); otherwise
// "write failed: strerror".
std::string WriteError(int err, const std::string& dir, uint64_t needed) {
  if (err != ENOSPC && err != EDQUOT) return std::string("write failed: ") + std::strerror(err);
  std::string message =
      std::string(std::strerror(err)) + " (" + std::to_string(needed) + " bytes needed";
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) == 0) {
    message += ", " + std::to_string(uint64_t(fs.f_bavail) * fs.f_frsize) + " available";
  }
  return message + ")";
}

// The process's umask, read without setting it: umask(2) only sets, and
// setting it to read it and back races with every file another thread
// creates meanwhile (the segment writer's thread).
mode_t ProcessUmask() {
  static const mode_t mask = [] {
    unsigned m = 022;
    if (FILE* f = fopen("/proc/self/status", "re")) {
      char line[256];
      while (fgets(line, sizeof(line), f) != nullptr) {
        if (sscanf(line, "Umask: %o", &m) == 1) break;
      }
      fclose(f);
    }
    return mode_t(m & 0777);
  }();
  return mask;
}

struct ZstdCCtxDeleter {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};

}  // namespace

Result<std::unique_ptr<AtomicFile>> AtomicFile::Create(const std::string& path) {
  std::string tmp_template = path + ".tmp.XXXXXX";
  std::vector<char> name(tmp_template.begin(), tmp_template.end());
  name.push_back('\0');
  int fd = mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return Status::Error(Errno("cannot create a temporary file")).WithContext(path);
  fchmod(fd, 0666 & ~ProcessUmask());
  std::unique_ptr<AtomicFile> f(new AtomicFile());
  f->path_ = path;
  f->tmp_ = name.data();
  f->fd_ = fd;
  // The stream writes through us: a failed write is remembered and the
  // rest only counted, so that a full disk is told with the size needed.
  cookie_io_functions_t io{};
  io.write = [](void* cookie, const char* data, size_t size) -> ssize_t {
    auto* file = static_cast<AtomicFile*>(cookie);
    file->attempted_ += size;
    for (size_t done = 0; file->error_ == 0 && done < size;) {
      ssize_t n = write(file->fd_, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        file->error_ = n < 0 ? errno : ENOSPC;
        break;
      }
      done += size_t(n);
    }
    return ssize_t(size);
  };
  f->stream_ = fopencookie(f.get(), "w", io);
  if (f->stream_ == nullptr) {
    close(fd);
    unlink(f->tmp_.c_str());
    return Status::Error(Errno("cannot open a stream")).WithContext(f->tmp_);
  }
  return f;
}

AtomicFile::~AtomicFile() {
  if (stream_ != nullptr) {
    fclose(stream_);
    close(fd_);
    unlink(tmp_.c_str());
  }
}

Status AtomicFile::Commit() {
  FILE* s = stream_;
  stream_ = nullptr;
  int err = fflush(s) != 0 ? errno : 0;
  fclose(s);
  if (err == 0) err = error_;
  if (err == 0 && fsync(fd_) != 0) err = errno;
  if (close(fd_) != 0 && err == 0) err = errno;
  if (err != 0) {
    unlink(tmp_.c_str());
    return Status::Error(WriteError(err, DirectoryOf(path_), attempted_)).WithContext(path_);
  }
  if (rename(tmp_.c_str(), path_.c_str()) != 0) {
    Status e = Status::Error(Errno("cannot rename temporary file into place")).WithContext(path_);
    unlink(tmp_.c_str());
    return e;
  }
  int dfd = open(DirectoryOf(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  // The whole size is known: take the space first, so that a full disk is
  // told at once, before anything is written. (Where the filesystem cannot
  // reserve space, the writes find out.)
  if (!bytes.empty() && fallocate(file->fd(), 0, 0, off_t(bytes.size())) != 0 &&
      (errno == ENOSPC || errno == EDQUOT)) {
    int err = errno;
    file.reset();  // the temporary goes: its blocks count as available
    return Status::Error(WriteError(err, DirectoryOf(path), bytes.size())).WithContext(path);
  }
  if (!bytes.empty()) fwrite(bytes.data(), 1, bytes.size(), file->stream());
  return file->Commit();
}

Status WriteContainer(const std::string& path, std::span<const uint8_t> payload) {
  std::unique_ptr<ZSTD_CCtx, ZstdCCtxDeleter> cctx(ZSTD_createCCtx());
  if (!cctx) return Status::Error("zstd: out of memory").WithContext(path);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, 6);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  std::vector<uint8_t> file(sizeof(FileHeader) + ZSTD_compressBound(payload.size()));
  size_t stored = ZSTD_compress2(cctx.get(), file.data() + sizeof(FileHeader),
                                 file.size() - sizeof(FileHeader), payload.data(), payload.size());
  if (ZSTD_isError(stored)) {
    return Status::Error(std::string("zstd: ") + ZSTD_getErrorName(stored)).WithContext(path);
  }
  FileHeader header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.major = kFormatMajor;
  header.minor = kFormatMinor;
  header.payload_size = payload.size();
  header.stored_size = stored;
  std::memcpy(file.data(), &header, sizeof(header));
  file.resize(sizeof(FileHeader) + stored);
  return WriteFileAtomically(path, file);
}

Result<std::vector<uint8_t>> DecodeContainer(std::span<const uint8_t> file) {
  FileHeader header;
  if (file.size() < sizeof(header)) {
    return Status::Error("truncated: " + std::to_string(file.size()) +
                         " bytes, shorter than the 32-byte header");
  }
  std::memcpy(&header, file.data(), sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0) {
    return Status::Error("not a microscope capture (wrong magic at offset 0)");
  }
  if (header.major > kFormatMajor) {
    return Status::Error("format version " + std::to_string(header.major) + "." +
                         std::to_string(header.minor) + " is newer than this microscope reads (" +
                         std::to_string(kFormatMajor) + ".x); upgrade microscope");
  }
  if (header.major < kFormatMajor) {
    // Majors change only when old readers cannot read new files; the
    // reverse holds too: no silent misreading of an older layout.
    return Status::Error("format version " + std::to_string(header.major) + "." +
                         std::to_string(header.minor) + " is older than this microscope reads (" +
                         std::to_string(kFormatMajor) + ".x); re-record it");
  }
  if (header.payload_size > kMaxPayloadBytes) {
    return Status::Error("header claims a payload of " + std::to_string(header.payload_size) +
                         " bytes (offset 16), more than the " + std::to_string(kMaxPayloadBytes) +
                         "-byte limit");
  }
  uint64_t available = file.size() - sizeof(header);
  if (header.stored_size != available) {
    return Status::Error("truncated or padded: header says " + std::to_string(header.stored_size) +
                         " compressed bytes after offset 32, file has " +
                         std::to_string(available));
  }
  // Allocate only what the zstd frame itself declares, so a small corrupt
  // file cannot make us reserve gigabytes.
  unsigned long long content = ZSTD_getFrameContentSize(file.data() + sizeof(header), available);
  if (content != header.payload_size) {
    return Status::Error("compressed payload (after offset 32) declares " +
                         (content >= ZSTD_CONTENTSIZE_ERROR ? std::string("no valid size")
                                                            : std::to_string(content) + " bytes") +
                         ", header says " + std::to_string(header.payload_size));
  }
  std::vector<uint8_t> payload;
  try {
    payload.resize(header.payload_size);
  } catch (const std::bad_alloc&) {
    return Status::Error("out of memory for a " + std::to_string(header.payload_size) +
                         "-byte payload");
  }
  size_t n =
      ZSTD_decompress(payload.data(), payload.size(), file.data() + sizeof(header), available);
  if (ZSTD_isError(n)) {
    return Status::Error(std::string("compressed payload is corrupt (after offset 32): ") +
                         ZSTD_getErrorName(n));
  }
  if (n != header.payload_size) {
    return Status::Error("payload is " + std::to_string(n) + " bytes, header says " +
                         std::to_string(header.payload_size));
  }
  return payload;
}

Result<std::vector<uint8_t>> ReadContainer(const std::string& path) {
  // A regular file only (a FIFO or /dev/zero would block or never end),
  // read up to the size it had when opened (one that grows meanwhile is
  // read as it was).
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                   ReadRegularFile(path, sizeof(FileHeader) + kMaxPayloadBytes + (1u << 20)));
  return DecodeContainer(bytes);
}

Result<std::vector<uint8_t>> ReadContainerFrom(int fd) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                   ReadWhole(fd, sizeof(FileHeader) + kMaxPayloadBytes + (1u << 20)));
  return DecodeContainer(bytes);
}

}  // namespace microscope::capture
