// The in-memory capture: the tables of schema.fbs as plain vectors.
// The recorder fills one and hands it to WriteCapture; ReadCapture returns
// one only after every index and cross-reference has been checked, so code
// above capture/ may index these tables without further checks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capture/column.h"

namespace microscope::capture {

// Dense row indexes. kNone marks an absent reference.
using StringId = uint32_t;
using ModuleId = uint32_t;
using ProcessId = uint32_t;
using ThreadId = uint32_t;
using FunctionId = uint32_t;
using FrameId = uint32_t;
using StackId = uint32_t;
inline constexpr uint32_t kNone = 0xFFFFFFFFu;
// Deeper stacks are refused by the reader (and never written): readers may
// walk a stack recursively.
inline constexpr uint32_t kMaxStackDepth = 4096;

enum class ModuleKind : uint8_t { kFile = 0, kKernel = 1, kVdso = 2, kAnonymous = 3 };
enum class FrameKind : uint8_t { kNative = 0, kKernel = 1, kUnmapped = 2, kNamed = 3, kInline = 4 };
// Why a stack stops where it does (schema.fbs documents each value).
enum class StackEnd : uint8_t {
  kFramePointerEnd = 0,
  kKernelOnly = 1,
  kMaxDepth = 2,
  kEmpty = 3,
  kComplete = 4,
  kNoUnwindInfo = 5,
  kStackCopyExhausted = 6,
  kCfaOutsideCopy = 7,
  kBadReturnAddress = 8,
  kUnmappedPc = 9,
  kUnsupportedCfi = 10,
};
inline constexpr uint8_t kStackEndCount = 11;

const char* StackEndName(StackEnd end);

struct Segment {
  uint64_t offset = 0;  // file offset
  uint64_t vaddr = 0;   // link-time address of `offset`
  uint64_t size = 0;    // bytes in the file
};

struct Module {
  StringId path = kNone;
  std::vector<uint8_t> build_id;
  uint64_t size = 0;
  ModuleKind kind = ModuleKind::kFile;
  std::vector<Segment> segments;  // PT_LOAD, when the file was read at record time
};

struct Mapping {
  ProcessId process = kNone;
  ModuleId module = kNone;
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t file_offset = 0;
  uint64_t time_start = 0;
  uint64_t time_end = 0;
};

struct Process {
  int32_t pid = 0;
  int32_t parent_pid = 0;
  StringId command = kNone;
  int32_t exit_status = -1;  // wait status as the shell shows it; -1 unknown
  uint64_t start_time = 0;
  uint64_t end_time = 0;
};

struct Thread {
  int32_t tid = 0;
  ProcessId process = kNone;
  StringId name = kNone;
  uint64_t start_time = 0;
  uint64_t end_time = 0;
};

struct Function {
  StringId name = kNone;  // demangled
  ModuleId module = kNone;
  StringId raw_name = kNone;  // the symbol as the file spells it, when it differs
};

struct Frame {
  FrameKind kind = FrameKind::kNative;
  ModuleId module = kNone;
  uint64_t address = 0;  // file offset (native), virtual address (kernel, unmapped)
  FunctionId function = kNone;
  StringId file = kNone;  // source file of the address, when DWARF lines were found
  uint32_t line = 0;
};

// Prefix tree of call stacks: node i is frames[i] called from node parent[i].
struct Stacks {
  std::vector<StackId> parent;
  std::vector<FrameId> frame;
  size_t size() const { return frame.size(); }
};

// The big table: its columns view the decompressed file when read.
struct Samples {
  Column<uint64_t> time;
  Column<ThreadId> thread;
  Column<StackId> stack;    // kNone for a sample without frames
  Column<uint64_t> weight;  // in settings.unit: CPU nanoseconds for a recording
  Column<StackEnd> end;
  Column<uint32_t> count;  // samples per row; empty: 1 each
  size_t size() const { return time.size(); }
  uint32_t CountAt(size_t i) const { return count.empty() ? 1 : count[i]; }
};

// System calls traced by BPF (syscalls.bpf.c), in start order.
struct Syscalls {
  std::vector<uint64_t> time;  // entry, on the capture's clock
  std::vector<uint64_t> duration;
  std::vector<ThreadId> thread;
  std::vector<uint32_t> nr;  // x86-64 system call number
  std::vector<int64_t> ret;  // -errno on failure
  std::vector<uint64_t> arg0, arg1, arg2;
  size_t size() const { return time.size(); }
};

struct Problem {
  StringId kind = kNone;
  uint64_t count = 0;
  StringId example = kNone;
};

struct Settings {
  std::string mode;  // "launch" or "attach"
  std::vector<std::string> command;
  int32_t target_pid = 0;
  uint32_t frequency = 0;
  std::string call_graph;
  uint32_t stack_copy = 0;
  bool kernel_frames = false;
  std::string host;
  std::string kernel_release;
  std::string clock;
  std::string recorder;
  uint64_t start_time = 0;
  uint64_t end_time = 0;
  uint64_t lost_records = 0;
  uint64_t lost_samples = 0;
  uint64_t throttles = 0;
  uint64_t unthrottles = 0;
  std::vector<std::string> notes;
  std::string metric = "cpu";
  std::string unit = "nanoseconds";
  std::string symbols;  // "now", "later" or "symbolize"; empty in older captures
  std::string boot_id;  // the recording's boot: KASLR moves the kernel at each boot
};

struct Capture {
  std::vector<std::string> strings;
  std::vector<Module> modules;
  std::vector<Mapping> mappings;
  std::vector<Process> processes;
  std::vector<Thread> threads;
  std::vector<Function> functions;
  std::vector<Frame> frames;
  Stacks stacks;
  Samples samples;
  Syscalls syscalls;
  std::vector<Problem> problems;
  Settings settings;
  // The decompressed file that viewed columns point into (null when built).
  std::shared_ptr<const std::vector<uint8_t>> backing;

  const std::string& str(StringId id) const {
    static const std::string kEmpty;
    return id == kNone ? kEmpty : strings[id];
  }
};

}  // namespace microscope::capture
