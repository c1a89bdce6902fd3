// perf.data's own structures (tools/perf/util/header.h, perf's event.h):
// the file header, event attributes as the file stores them, the feature
// sections' contents, and perf's record types. Every reader here is bounded
// by the bytes it is given and names the byte offset it refuses.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace microscope::import {

inline constexpr uint64_t kMagic = 0x32454c4946524550ull;         // "PERFILE2"
inline constexpr uint64_t kMagicSwapped = 0x50455246494c4532ull;  // big-endian
inline constexpr uint64_t kFileHeaderSize = 104;
inline constexpr uint64_t kPipeHeaderSize = 16;
inline constexpr uint64_t kAttrSizeVer0 = 64;
inline constexpr int kFeatureBits = 256;
inline constexpr uint64_t kMaxAttrs = 4096;
inline constexpr uint64_t kMaxIds = 1 << 20;         // of all attributes
inline constexpr uint64_t kMaxRecords = 1ull << 28;  // queued kernel records (24 bytes each)
inline constexpr int kFeatDirFormat = 24;
// The build-ID table's key for the kernel (its filename varies by perf).
inline constexpr const char* kKernelKey = "[kernel.kallsyms]";

// perf's own record types (from PERF_RECORD_USER_TYPE_START).
inline constexpr uint32_t kUserTypeStart = 64;
inline constexpr uint32_t kHeaderAttr = 64;
inline constexpr uint32_t kHeaderTracingData = 66;
inline constexpr uint32_t kHeaderBuildId = 67;
inline constexpr uint32_t kFinishedRound = 68;
inline constexpr uint32_t kAuxtrace = 71;
inline constexpr uint32_t kHeaderFeature = 80;
inline constexpr uint32_t kCompressed = 81;
inline constexpr uint32_t kFinishedInit = 82;
inline constexpr uint32_t kCompressed2 = 83;

struct Section {
  uint64_t offset;
  uint64_t size;
};

struct FileHeader {
  uint64_t magic;
  uint64_t size;
  uint64_t attr_size;
  Section attrs;
  Section data;
  Section event_types;
  uint64_t features[4];
};
static_assert(sizeof(FileHeader) == kFileHeaderSize);

// What the importer uses of a perf_event_attr (fields past the stored
// size are zero, as perf reads them), with the event's ids and name.
struct Attr {
  uint32_t type = 0;
  uint64_t config = 0;
  uint64_t period_or_freq = 0;
  uint64_t sample_type = 0;
  uint64_t read_format = 0;
  uint64_t flags = 0;
  uint64_t regs_user = 0;
  uint32_t stack_user = 0;
  int32_t clockid = 0;
  uint16_t max_stack = 0;
  std::vector<uint64_t> ids;
  std::string name;

  bool Freq() const { return flags >> 10 & 1; }
  bool SampleIdAll() const { return flags >> 18 & 1; }
  bool ExcludeCallchainKernel() const { return flags >> 21 & 1; }
  bool UseClockid() const { return flags >> 25 & 1; }
};

// `bytes`: the attribute as stored (its own size field says how much of
// it is there); `at`: its offset, for errors.
Result<Attr> ParseAttr(std::span<const uint8_t> bytes, uint64_t at);

// The feature sections' contents the importer keeps.
struct FileMeta {
  std::string hostname, os_release, version, arch, cpu_desc;
  std::vector<std::string> cmdline;
  uint32_t nr_cpus_available = 0, nr_cpus_online = 0;
  bool compressed = false;
  uint32_t compression_type = 0;
  // By filename as perf recorded it (the kernel under kKernelKey).
  std::map<std::string, std::vector<uint8_t>> build_ids;
};

// Reads feature `bit`'s section `data` (at byte `at`) into `meta`; event
// names (EVENT_DESC) go to the attributes whose ids they list.
Status ReadFeature(int bit, std::span<const uint8_t> data, uint64_t at, FileMeta* meta,
                   std::vector<Attr>* attrs);
// One build-ID record (the BUILD_ID feature's entries, HEADER_BUILD_ID).
Status ReadBuildIdRecord(std::span<const uint8_t> record, uint64_t at, FileMeta* meta);

const char* RecordName(uint32_t type);
const char* FeatureName(int bit);
// perf's name for an event it did not name (cpu-clock, cycles, ...).
std::string EventName(const Attr& a);
// The sample fields set in `sample_type` that the decoder does not read.
std::string UnknownSampleFields(uint64_t sample_type);
// The sample fields after the stack copy (weights, data sources,
// transaction, registers at interrupt, physical addresses, cgroup, page
// sizes, AUX): they follow every field the importer reads, which stops
// before them.
uint64_t TailSampleFields();
// cpu-clock and task-clock: periods in nanoseconds of CPU time.
bool IsClockEvent(const Attr& a);
std::string ClockName(int32_t clockid);
// This host's _text address (0: not readable).
uint64_t KallsymsText();

}  // namespace microscope::import
