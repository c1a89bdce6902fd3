// The .mscap file: a fixed 32-byte header, then one zstd frame holding the
// FlatBuffers payload (schema.fbs). Little-endian, as is every host we record.
//
//   0       8       10      12      16              24              32
//   | magic | major | minor | flags | payload bytes | stored bytes  | zstd frame...
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace microscope::capture {

inline constexpr char kMagic[8] = {'M', 'S', 'C', 'A', 'P', '\r', '\n', '\x1a'};
// History: 1.0 first format; 1.1 StackEnd values 4..10 (DWARF unwinding);
// 1.2 samples.count, settings.metric/unit, FrameKind.Named;
// 2.0 Frame gained file and line (a struct grew: 1.x readers cannot read it);
// 2.1 module segments, raw names; 2.2 syscalls, boot_id; 2.3 off-CPU
// intervals and counts, syscall stacks, settings of the BPF parts; 2.4
// FrameKind.Interpreted (a 2.3 reader refuses such frames by their kind);
// 2.5 settings.lost_task_records, StackEnd.InExec; 2.6 Module.runtime and
// label spans (python.gil): fields older readers skip, so they read 2.6
// files without knowing which modules are interpreters or the labels;
// 2.7 settings.ring_lost_records and kernel_lost_records; 2.8 probe sites
// and records (the program's own zones, marks, labels and counters); 2.9
// the wall-clock start, parts of a recording, the budget's steps; 2.10
// samples.cpu (the CPU each sample was taken on) and the readings table
// (record --readings: schedstat, cgroup CPU throttling, pressure); 2.11
// traces, other tools' traces imported onto the timeline (microscope
// import), each whole in itself, and gaps (windows the recording does not
// know, with their causes).
inline constexpr uint16_t kFormatMajor = 2;
inline constexpr uint16_t kFormatMinor = 11;
// A reader refuses payloads claiming more than this: a corrupt size must not
// make us allocate the machine's memory.
// FlatBuffers buffers are limited to 2 GiB.
inline constexpr uint64_t kMaxPayloadBytes = (2ull << 30) - 1;

struct FileHeader {
  char magic[8];
  uint16_t major;
  uint16_t minor;
  uint32_t flags;  // reserved, 0
  uint64_t payload_size;
  uint64_t stored_size;
};
static_assert(sizeof(FileHeader) == 32, "the on-disk header is 32 bytes");

// Compresses `payload` and writes header + frame to `path` atomically:
// a temporary file in the same directory, fsync, rename.
Status WriteContainer(const std::string& path, std::span<const uint8_t> payload);

// Reads and checks the header, decompresses the payload.
Result<std::vector<uint8_t>> ReadContainer(const std::string& path);
// The same from a file already opened (a regular file: base/file_policy.h).
Result<std::vector<uint8_t>> ReadContainerFrom(int fd);
Result<std::vector<uint8_t>> DecodeContainer(std::span<const uint8_t> file);

// Writes `bytes` to `path` through a temporary name and rename.
Status WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes);

// A file written in pieces and published atomically: a temporary in the
// target's directory (mkstemp), fsync, rename, directory fsync. Destroyed
// without Commit(), it removes the temporary: no half-written file ever
// stands under the final name.
class AtomicFile {
 public:
  static Result<std::unique_ptr<AtomicFile>> Create(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;  // its stream writes through `this`
  AtomicFile& operator=(const AtomicFile&) = delete;
  // Writes go through it; an error is kept for Commit(), which says it with
  // the size everything written would have needed.
  FILE* stream() { return stream_; }
  int fd() const { return fd_; }
  Status Commit();

 private:
  AtomicFile() = default;
  std::string path_;
  std::string tmp_;
  FILE* stream_ = nullptr;
  int fd_ = -1;
  uint64_t attempted_ = 0;  // bytes written to the stream, kept or not
  int error_ = 0;           // the first write's errno
};

}  // namespace microscope::capture
