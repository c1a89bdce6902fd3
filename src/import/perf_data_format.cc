#include "src/import/perf_data_format.h"

#include <linux/perf_event.h>

#include <cstdio>
#include <cstring>
#include <string_view>

#include "base/byte_reader.h"

namespace microscope::import {
namespace {

Status Bad(uint64_t at, std::string_view what, const std::string& why) {
  return Status::Error(StatusCode::kDataLoss,
                       "at byte " + std::to_string(at) + " (" + std::string(what) + "): " + why);
}

template <typename T>
T Field(std::span<const uint8_t> bytes, size_t offset) {
  T v{};
  if (offset + sizeof(T) <= bytes.size()) std::memcpy(&v, bytes.data() + offset, sizeof(T));
  return v;
}

// perf's do_write_string: a u32 length (the NUL and padding included),
// then the bytes. Advances `r`.
Result<std::string> ReadString(ByteReader& r, uint64_t base, std::string_view what) {
  uint32_t len;
  const uint64_t at = base + r.offset();
  if (!r.Read(&len)) return Bad(at, what, "no room for the string's length");
  std::span<const uint8_t> bytes;
  if (len > 1 << 20 || !r.View(len, &bytes))
    return Bad(at, what, "a string of " + std::to_string(len) + " bytes overruns its section");
  const char* p = reinterpret_cast<const char*>(bytes.data());
  return std::string(p, strnlen(p, bytes.size()));
}

Status Take(Result<std::string> read, std::string* out) {
  if (!read.ok()) return read.status();
  *out = std::move(read).value();
  return OkStatus();
}

}  // namespace

Result<Attr> ParseAttr(std::span<const uint8_t> bytes, uint64_t at) {
  if (bytes.size() < kAttrSizeVer0)
    return Bad(at, "event attribute", "shorter than the 64 bytes of its first version");
  uint32_t size = Field<uint32_t>(bytes, 4);
  if (size == 0) size = kAttrSizeVer0;
  if (size < kAttrSizeVer0 || size > bytes.size())
    return Bad(at + 4, "event attribute",
               "its size " + std::to_string(size) + " does not fit the " +
                   std::to_string(bytes.size()) + " bytes stored");
  auto a_bytes = bytes.first(size);
  Attr a;
  a.type = Field<uint32_t>(a_bytes, 0);
  a.config = Field<uint64_t>(a_bytes, 8);
  a.period_or_freq = Field<uint64_t>(a_bytes, 16);
  a.sample_type = Field<uint64_t>(a_bytes, 24);
  a.read_format = Field<uint64_t>(a_bytes, 32);
  a.flags = Field<uint64_t>(a_bytes, 40);
  a.regs_user = Field<uint64_t>(a_bytes, 80);
  a.stack_user = Field<uint32_t>(a_bytes, 88);
  a.clockid = Field<int32_t>(a_bytes, 92);
  a.max_stack = Field<uint16_t>(a_bytes, 108);
  return a;
}

Status ReadBuildIdRecord(std::span<const uint8_t> record, uint64_t at, FileMeta* meta) {
  // perf_record_header_build_id: header, pid, 20 bytes of ID, its size
  // (valid with PERF_RECORD_MISC_BUILD_ID_SIZE), 3 reserved, the filename.
  constexpr size_t kFixed = 8 + 4 + 24;
  constexpr uint16_t kMiscBuildIdSize = 1 << 15;
  if (record.size() < kFixed + 1) return Bad(at, "build ID", "shorter than a build-ID record");
  const uint16_t misc = Field<uint16_t>(record, 4);
  uint8_t size = (misc & kMiscBuildIdSize) ? record[8 + 4 + 20] : 20;
  if (size > 20) return Bad(at + 32, "build ID", "an ID of " + std::to_string(size) + " bytes");
  auto name = record.subspan(kFixed);
  const char* p = reinterpret_cast<const char*>(name.data());
  const size_t len = strnlen(p, name.size());
  if (len == name.size()) return Bad(at + kFixed, "build ID", "the filename is not NUL-terminated");
  std::string file(p, len);
  std::vector<uint8_t> id(record.begin() + 12, record.begin() + 12 + size);
  // Trailing zeros of a 20-byte ID perf padded are not the ID's.
  if (!(misc & kMiscBuildIdSize))
    while (!id.empty() && id.back() == 0) id.pop_back();
  const bool kernel = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL &&
                      file.starts_with("[kernel.kallsyms]");
  meta->build_ids.try_emplace(kernel ? std::string(kKernelKey) : file, std::move(id));
  return OkStatus();
}

Status ReadFeature(int bit, std::span<const uint8_t> data, uint64_t at, FileMeta* meta,
                   std::vector<Attr>* attrs) {
  ByteReader r(data);
  switch (bit) {
    case 2: {  // BUILD_ID: build-ID records back to back
      size_t off = 0;
      while (off + 8 <= data.size()) {
        const uint16_t size = Field<uint16_t>(data, off + 6);
        if (size < 8 || size > data.size() - off)
          return Bad(at + off, "feature BUILD_ID",
                     "a record of " + std::to_string(size) + " bytes overruns the section");
        RETURN_IF_ERROR(ReadBuildIdRecord(data.subspan(off, size), at + off, meta));
        off += size;
      }
      return OkStatus();
    }
    case 3:
      return Take(ReadString(r, at, "feature HOSTNAME"), &meta->hostname);
    case 4:
      return Take(ReadString(r, at, "feature OSRELEASE"), &meta->os_release);
    case 5:
      return Take(ReadString(r, at, "feature VERSION"), &meta->version);
    case 6:
      return Take(ReadString(r, at, "feature ARCH"), &meta->arch);
    case 7:
      if (!r.Read(&meta->nr_cpus_available) || !r.Read(&meta->nr_cpus_online))
        return Bad(at, "feature NRCPUS", "shorter than its two counts");
      return OkStatus();
    case 8:
      return Take(ReadString(r, at, "feature CPUDESC"), &meta->cpu_desc);
    case 11: {  // CMDLINE
      uint32_t n;
      if (!r.Read(&n) || n > 4096)
        return Bad(at, "feature CMDLINE", "no count, or past 4096 words");
      meta->cmdline.clear();
      for (uint32_t i = 0; i < n; ++i) {
        ASSIGN_OR_RETURN(std::string word, ReadString(r, at, "feature CMDLINE"));
        meta->cmdline.push_back(std::move(word));
      }
      return OkStatus();
    }
    case 12: {  // EVENT_DESC: per event its attribute, ids and name
      uint32_t n, size;
      if (!r.Read(&n) || !r.Read(&size) || n > kMaxAttrs || size < kAttrSizeVer0 || size > 4096)
        return Bad(at, "feature EVENT_DESC", "its event count or attribute size is not perf's");
      for (uint32_t i = 0; i < n; ++i) {
        uint32_t ids;
        if (!r.Skip(size) || !r.Read(&ids) || ids > kMaxIds || ids > r.remaining() / 8)
          return Bad(at + r.offset(), "feature EVENT_DESC", "an event overruns the section");
        ASSIGN_OR_RETURN(std::string name, ReadString(r, at, "feature EVENT_DESC"));
        std::vector<uint64_t> id(ids);
        for (uint64_t& v : id)
          if (!r.Read(&v))
            return Bad(at + r.offset(), "feature EVENT_DESC", "ids overrun the section");
        // The event with the same first id, or the same place.
        for (size_t k = 0; k < attrs->size(); ++k) {
          Attr& a = (*attrs)[k];
          if (!a.ids.empty() && !id.empty() ? a.ids[0] == id[0] : k == i) a.name = name;
        }
      }
      return OkStatus();
    }
    case 27:  // COMPRESSED: version, type, level, ratio, mmap_len
      if (!r.Skip(4) || !r.Read(&meta->compression_type))
        return Bad(at, "feature COMPRESSED", "shorter than its type");
      meta->compressed = true;
      return OkStatus();
    default:
      return OkStatus();  // features the import does not use
  }
}

const char* RecordName(uint32_t type) {
  static const char* const kKernel[] = {"record type 0", "MMAP",
                                        "LOST",          "COMM",
                                        "EXIT",          "THROTTLE",
                                        "UNTHROTTLE",    "FORK",
                                        "READ",          "SAMPLE",
                                        "MMAP2",         "AUX",
                                        "ITRACE_START",  "LOST_SAMPLES",
                                        "SWITCH",        "SWITCH_CPU_WIDE",
                                        "NAMESPACES",    "KSYMBOL",
                                        "BPF_EVENT",     "CGROUP",
                                        "TEXT_POKE",     "AUX_OUTPUT_HW_ID"};
  static const char* const kUser[] = {"HEADER_ATTR",
                                      "HEADER_EVENT_TYPE",
                                      "HEADER_TRACING_DATA",
                                      "HEADER_BUILD_ID",
                                      "FINISHED_ROUND",
                                      "ID_INDEX",
                                      "AUXTRACE_INFO",
                                      "AUXTRACE",
                                      "AUXTRACE_ERROR",
                                      "THREAD_MAP",
                                      "CPU_MAP",
                                      "STAT_CONFIG",
                                      "STAT",
                                      "STAT_ROUND",
                                      "EVENT_UPDATE",
                                      "TIME_CONV",
                                      "HEADER_FEATURE",
                                      "COMPRESSED",
                                      "FINISHED_INIT",
                                      "COMPRESSED2"};
  if (type < std::size(kKernel)) return kKernel[type];
  if (type >= kUserTypeStart && type - kUserTypeStart < std::size(kUser))
    return kUser[type - kUserTypeStart];
  return "unknown record type";
}

const char* FeatureName(int bit) {
  static const char* const kNames[] = {
      "RESERVED",        "TRACING_DATA", "BUILD_ID",     "HOSTNAME",     "OSRELEASE",
      "VERSION",         "ARCH",         "NRCPUS",       "CPUDESC",      "CPUID",
      "TOTAL_MEM",       "CMDLINE",      "EVENT_DESC",   "CPU_TOPOLOGY", "NUMA_TOPOLOGY",
      "BRANCH_STACK",    "PMU_MAPPINGS", "GROUP_DESC",   "AUXTRACE",     "STAT",
      "CACHE",           "SAMPLE_TIME",  "MEM_TOPOLOGY", "CLOCKID",      "DIR_FORMAT",
      "BPF_PROG_INFO",   "BPF_BTF",      "COMPRESSED",   "CPU_PMU_CAPS", "CLOCK_DATA",
      "HYBRID_TOPOLOGY", "PMU_CAPS"};
  return bit >= 0 && size_t(bit) < std::size(kNames) ? kNames[bit] : "unknown feature";
}

std::string EventName(const Attr& a) {
  static const char* const kHardware[] = {"cycles",
                                          "instructions",
                                          "cache-references",
                                          "cache-misses",
                                          "branches",
                                          "branch-misses",
                                          "bus-cycles",
                                          "stalled-cycles-frontend",
                                          "stalled-cycles-backend",
                                          "ref-cycles"};
  static const char* const kSoftware[] = {
      "cpu-clock",        "task-clock",   "page-faults",  "context-switches",
      "cpu-migrations",   "minor-faults", "major-faults", "alignment-faults",
      "emulation-faults", "dummy",        "bpf-output",   "cgroup-switches"};
  if (a.type == PERF_TYPE_HARDWARE && a.config < std::size(kHardware)) return kHardware[a.config];
  if (a.type == PERF_TYPE_SOFTWARE && a.config < std::size(kSoftware)) return kSoftware[a.config];
  return "event type " + std::to_string(a.type) + " config " + std::to_string(a.config);
}

std::string UnknownSampleFields(uint64_t sample_type) {
  std::string out;
  auto add = [&](uint64_t bit, const char* name) {
    if (sample_type & bit) out += std::string(out.empty() ? "" : ", ") + name;
  };
  add(PERF_SAMPLE_READ, "READ");
  add(PERF_SAMPLE_RAW, "RAW (tracepoint data)");
  add(PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK");
  if (sample_type >> 25) add(sample_type & ~((uint64_t(1) << 25) - 1), "bits past WEIGHT_STRUCT");
  return out;
}

uint64_t TailSampleFields() {
  return PERF_SAMPLE_WEIGHT | PERF_SAMPLE_DATA_SRC | PERF_SAMPLE_TRANSACTION |
         PERF_SAMPLE_REGS_INTR | PERF_SAMPLE_PHYS_ADDR | PERF_SAMPLE_AUX | PERF_SAMPLE_CGROUP |
         PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_WEIGHT_STRUCT;
}

bool IsClockEvent(const Attr& a) {
  return a.type == PERF_TYPE_SOFTWARE &&
         (a.config == PERF_COUNT_SW_CPU_CLOCK || a.config == PERF_COUNT_SW_TASK_CLOCK);
}

std::string ClockName(int32_t clockid) {
  switch (clockid) {
    case 0:
      return "CLOCK_REALTIME";
    case 1:
      return "CLOCK_MONOTONIC";
    case 4:
      return "CLOCK_MONOTONIC_RAW";
    case 7:
      return "CLOCK_BOOTTIME";
    case 11:
      return "CLOCK_TAI";
    default:
      return "clock " + std::to_string(clockid);
  }
}

uint64_t KallsymsText() {
  FILE* f = std::fopen("/proc/kallsyms", "re");
  if (f == nullptr) return 0;
  char line[512];
  uint64_t found = 0;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long addr;
    char type;
    char name[256];
    if (std::sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
        std::strcmp(name, "_text") == 0) {
      found = addr;
      break;
    }
  }
  std::fclose(f);
  return found;
}

}  // namespace microscope::import
