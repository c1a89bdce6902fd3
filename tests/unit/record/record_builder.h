// Builds perf ring records byte by byte, as the kernel lays them out, for
// decoder, processor and benchmark inputs.
#pragma once

#include <linux/perf_event.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "src/record/decode.h"

namespace microscope::testing {

class RecordBuilder {
 public:
  explicit RecordBuilder(uint32_t type, uint16_t misc = 0) {
    Put<uint32_t>(type);
    Put<uint16_t>(misc);
    Put<uint16_t>(0);  // size, patched by Finish
  }
  template <typename T>
  RecordBuilder& Put(T v) {
    size_t old = bytes_.size();
    bytes_.resize(old + sizeof(T));
    std::memcpy(bytes_.data() + old, &v, sizeof(T));
    return *this;
  }
  RecordBuilder& PutString(const std::string& s) {
    for (char c : s) bytes_.push_back(uint8_t(c));
    bytes_.push_back(0);
    while (bytes_.size() % 8 != 0) bytes_.push_back(0);
    return *this;
  }
  // The sample_id_all trailer for the layout the collector uses
  // (TID, TIME, CPU, IDENTIFIER).
  RecordBuilder& Trailer(uint32_t pid, uint32_t tid, uint64_t time, uint32_t cpu = 0) {
    Put(pid).Put(tid).Put(time).Put(cpu).Put<uint32_t>(0).Put<uint64_t>(7);
    return *this;
  }
  std::vector<uint8_t> Finish() {
    uint16_t size = uint16_t(bytes_.size());
    std::memcpy(bytes_.data() + 6, &size, 2);
    return bytes_;
  }

 private:
  std::vector<uint8_t> bytes_;
};

// Each ring's bytes as the collector hands them over, one record per chunk,
// so that every walk crosses chunks.
inline std::vector<record::RingArena> Rings(const std::vector<std::vector<uint8_t>>& bytes) {
  std::vector<record::RingArena> out(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    record::ForEachRecord(bytes[i], [&](uint32_t, std::span<const uint8_t> r) {
      out[i].Append(std::vector<uint8_t>(r.begin(), r.end()));
      return true;
    });
  }
  return out;
}

inline record::SampleLayout CollectorLayout() {
  record::SampleLayout l;
  l.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                  PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
  return l;
}

inline std::vector<uint8_t> SampleRecord(uint32_t pid, uint32_t tid, uint64_t time,
                                         const std::vector<uint64_t>& chain,
                                         uint64_t period = 1000000) {
  RecordBuilder b(record::kRecordSample, PERF_RECORD_MISC_USER);
  b.Put<uint64_t>(7).Put<uint64_t>(chain.empty() ? 0 : chain.back());
  b.Put(pid).Put(tid).Put(time).Put<uint32_t>(0).Put<uint32_t>(0).Put(period);
  b.Put<uint64_t>(chain.size());
  for (uint64_t ip : chain) b.Put(ip);
  return b.Finish();
}

inline std::vector<uint8_t> Mmap2Record(uint32_t pid, uint64_t addr, uint64_t len, uint64_t pgoff,
                                        const std::string& path, uint64_t time,
                                        std::vector<uint8_t> build_id = {}) {
  RecordBuilder b(record::kRecordMmap2, build_id.empty() ? 0 : record::kMiscMmapBuildId);
  b.Put(pid).Put(pid).Put(addr).Put(len).Put(pgoff);
  if (build_id.empty()) {
    b.Put<uint32_t>(8).Put<uint32_t>(1).Put<uint64_t>(1234).Put<uint64_t>(0);
  } else {
    b.Put<uint8_t>(uint8_t(build_id.size())).Put<uint8_t>(0).Put<uint16_t>(0);
    build_id.resize(20);
    for (uint8_t x : build_id) b.Put(x);
  }
  b.Put<uint32_t>(5 /*PROT_READ|PROT_EXEC*/).Put<uint32_t>(2 /*MAP_PRIVATE*/);
  b.PutString(path);
  b.Trailer(pid, pid, time);
  return b.Finish();
}

inline std::vector<uint8_t> CommRecord(uint32_t pid, uint32_t tid, const std::string& comm,
                                       bool exec, uint64_t time) {
  RecordBuilder b(record::kRecordComm, exec ? record::kMiscCommExec : 0);
  b.Put(pid).Put(tid).PutString(comm).Trailer(pid, tid, time);
  return b.Finish();
}

inline std::vector<uint8_t> TaskRecord(uint32_t type, uint32_t pid, uint32_t ppid, uint32_t tid,
                                       uint32_t ptid, uint64_t time) {
  RecordBuilder b(type);
  b.Put(pid).Put(ppid).Put(tid).Put(ptid).Put(time).Trailer(pid, tid, time);
  return b.Finish();
}

}  // namespace microscope::testing
