#include "src/import/perf_data.h"

#include <linux/perf_event.h>
#include <zstd.h>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "base/hex.h"
#include "base/open_file.h"
#include "src/import/perf_data_format.h"
#include "src/record/decode.h"
#include "src/record/module_cfi.h"
#include "src/record/processor.h"
#include "src/record/user_regs.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/kallsyms.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::import {
namespace {

using record::Event;
using record::EventType;

// Where the records come from: the file itself, or the stream the file's
// COMPRESSED records inflate to.
enum class Source : uint8_t { kFile, kInflated };

// One kernel record to process, in time order (stable: file order within a
// time).
struct Item {
  uint64_t time;
  uint64_t offset;  // in its source
  Source source;
  uint32_t attr;  // whose layout decodes it
};

class Reader {
 public:
  Reader(std::span<const uint8_t> bytes, const PerfDataOptions& options)
      : bytes_(bytes),
        options_(options),
        max_inflate_(std::max<uint64_t>(
            options.max_inflate, std::min<uint64_t>(uint64_t(bytes.size()) * 32, 4ull << 30))) {}

  Result<capture::Capture> Read(const std::string& name);

 private:
  Status ReadFileMode();
  Status ReadPipeMode();
  // Walks records back to back in `region` (at `base` of `source`),
  // taking perf's own and queueing the kernel's.
  Status TakeRecords(std::span<const uint8_t> region, uint64_t base, Source source);
  Status TakeUserRecord(const record::RecordHeader& h, std::span<const uint8_t> record, uint64_t at,
                        Source source, size_t* extra);
  Status QueueKernelRecord(const record::RecordHeader& h, std::span<const uint8_t> record,
                           uint64_t at, Source source);
  Status Inflate(std::span<const uint8_t> data, uint64_t at);
  Status Layouts();
  Result<uint32_t> AttrOf(uint32_t type, std::span<const uint8_t> record,
                          const std::string& where) const;
  Status ProcessAll(record::Processor* processor);
  Status ProcessOne(const Item& item, record::Processor* processor);
  // The build ID of the file at the mapping's path on this host when it is
  // the recorded file itself: the same device and inode (a pipe-mode file
  // has no build IDs). Empty when not.
  std::span<const uint8_t> ProvedByInode(const Event& e);
  std::map<std::tuple<std::string, uint32_t, uint32_t, uint64_t>, std::vector<uint8_t>> by_inode_;
  std::vector<std::string> ModuleFiles(std::string_view path,
                                       std::span<const uint8_t> build_id) const;
  void Describe(const std::string& name, capture::Settings* s) const;
  Status Symbolize(capture::Capture* c) const;
  std::span<const uint8_t> SourceBytes(Source s) const {
    return s == Source::kFile ? bytes_ : std::span<const uint8_t>(inflated_);
  }
  std::string Where(uint64_t at, Source source) const {
    return source == Source::kFile ? "at byte " + std::to_string(at)
                                   : "at byte " + std::to_string(at) +
                                         " of the stream the COMPRESSED records inflate to";
  }

  std::span<const uint8_t> bytes_;
  const PerfDataOptions& options_;
  const uint64_t max_inflate_;  // options_' limit, or 32 times the file
  bool pipe_ = false;
  FileMeta meta_;
  std::vector<Attr> attrs_;
  std::unordered_map<uint64_t, uint32_t> attr_of_id_;
  std::vector<record::SampleLayout> layouts_;
  // The attribute whose samples become the capture's (the first that is
  // not a dummy tracking event).
  uint32_t sampled_ = 0;
  bool shared_layout_ = true;  // every attribute decodes alike
  std::vector<Item> items_;
  uint64_t last_time_ = 0;
  std::vector<uint8_t> inflated_;
  std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> zstd_{nullptr, ZSTD_freeDStream};
  std::map<std::string, uint64_t> skipped_;  // record kinds not used, and how many
  uint64_t other_event_samples_ = 0;
  uint64_t pipe_ids_ = 0;
  uint64_t kernel_text_ = 0;  // _text at recording, from the kernel's MMAP record
  uint64_t host_text_ = 0;    // and on this host now
  // Per sample: the callchain and registers as the processor takes them.
  std::vector<uint64_t> chain_;
  std::vector<uint8_t> regs_;
  int regs_index_[record::kUserRegCount] = {};
  bool regs_complete_ = false;
  bool foreign_arch_ = false;  // recorded on another architecture than this host's
};

Status Refuse(const std::string& where, std::string_view what, const std::string& why) {
  return Status::Error(StatusCode::kDataLoss, where + " (" + std::string(what) + "): " + why);
}

bool IsDummy(const Attr& a) {
  return a.type == PERF_TYPE_SOFTWARE && a.config == PERF_COUNT_SW_DUMMY;
}

Result<capture::Capture> Reader::Read(const std::string& name) {
  if (bytes_.size() < 16)
    return Refuse("at byte 0", "header", "shorter than perf's 16-byte header");
  uint64_t magic, size;
  std::memcpy(&magic, bytes_.data(), 8);
  std::memcpy(&size, bytes_.data() + 8, 8);
  if (magic == kMagicSwapped)
    return Refuse("at byte 0", "header",
                  "written on a big-endian machine, which this reader does not read");
  if (magic != kMagic) return Refuse("at byte 0", "header", "no perf.data magic (PERFILE2)");
  pipe_ = size == kPipeHeaderSize;
  RETURN_IF_ERROR(pipe_ ? ReadPipeMode() : ReadFileMode());
  if (attrs_.empty()) return Refuse("at byte 0", "header", "the file has no event attributes");
  RETURN_IF_ERROR(Layouts());

  record::Processor::Options po;
  const Attr& a = attrs_[sampled_];
  const bool dwarf =
      (a.sample_type & PERF_SAMPLE_REGS_USER) && (a.sample_type & PERF_SAMPLE_STACK_USER);
  po.call_graph =
      dwarf ? record::Processor::CallGraph::kDwarf : record::Processor::CallGraph::kFramePointer;
  po.max_stack = a.max_stack != 0 ? a.max_stack : 127;
  po.module_files = [this](std::string_view path, std::span<const uint8_t> id) {
    return options_.host_files ? ModuleFiles(path, id) : std::vector<std::string>();
  };
  // No build ID for the kernel (a pipe-mode file): this host's, when it is
  // the same release placed where the recording's was (KASLR's _text).
  if (options_.host_files && kernel_text_ != 0) host_text_ = KallsymsText();
  utsname host;
  if (!meta_.build_ids.contains(kKernelKey) && host_text_ == kernel_text_ && host_text_ != 0 &&
      uname(&host) == 0 && meta_.os_release == host.release) {
    meta_.build_ids[kKernelKey] = symbols::KernelBuildId();
  }
  if (auto k = meta_.build_ids.find(kKernelKey); k != meta_.build_ids.end())
    po.kernel_build_id = k->second;
  else
    po.kernel_build_id = std::vector<uint8_t>();
  record::Processor processor(po);
  uint64_t start = 0, end = 0;
  for (const Item& i : items_) {
    if (i.time == 0) continue;
    if (start == 0 || i.time < start) start = i.time;
    end = std::max(end, i.time);
  }
  processor.settings().start_time = start;
  RETURN_IF_ERROR(ProcessAll(&processor));
  capture::Capture c = processor.Finish(end);
  if (!(a.sample_type & PERF_SAMPLE_CPU)) c.samples.cpu.assign(0, 0);  // not recorded: not known
  c.settings.start_time = start;
  c.settings.end_time = end;
  Describe(name, &c.settings);
  if (other_event_samples_ != 0) {
    c.settings.notes.push_back(std::to_string(other_event_samples_) +
                               " samples of the file's other events not imported (only " + a.name +
                               "'s)");
  }
  for (const auto& [kind, n] : skipped_)
    c.settings.notes.push_back(std::to_string(n) + " " + kind + " records not used");
  RETURN_IF_ERROR(Symbolize(&c));
  return c;
}

Status Reader::ReadFileMode() {
  if (bytes_.size() < kFileHeaderSize)
    return Refuse("at byte 0", "header", "shorter than perf's 104-byte file header");
  FileHeader h;
  std::memcpy(&h, bytes_.data(), sizeof(h));
  if (h.size != kFileHeaderSize)
    return Refuse("at byte 8", "header", "header size " + std::to_string(h.size) + " is not 104");
  auto inside = [&](const Section& s) {
    return s.offset <= bytes_.size() && s.size <= bytes_.size() - s.offset;
  };
  if (!inside(h.attrs))
    return Refuse("at byte 24", "header",
                  "the attribute section lies past the file's end (" +
                      std::to_string(bytes_.size()) + " bytes)");
  if (!inside(h.data))
    return Refuse("at byte 40", "header",
                  "the data section [" + std::to_string(h.data.offset) + ", +" +
                      std::to_string(h.data.size) + ") lies past the file's end (" +
                      std::to_string(bytes_.size()) + " bytes): a truncated file");
  if (h.attr_size < kAttrSizeVer0 + sizeof(Section) || h.attr_size > 4096)
    return Refuse("at byte 16", "header",
                  "attribute size " + std::to_string(h.attr_size) + " is not one perf writes");
  const uint64_t count = h.attrs.size / h.attr_size;
  if (count == 0 || count > kMaxAttrs || h.attrs.size % h.attr_size != 0)
    return Refuse("at byte 24", "header",
                  "the attribute section holds " + std::to_string(h.attrs.size) +
                      " bytes, not a whole number (at most " + std::to_string(kMaxAttrs) + ") of " +
                      std::to_string(h.attr_size) + "-byte attributes");
  uint64_t total_ids = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = h.attrs.offset + i * h.attr_size;
    auto entry = bytes_.subspan(at, h.attr_size);
    ASSIGN_OR_RETURN(Attr a, ParseAttr(entry.first(h.attr_size - sizeof(Section)), at));
    Section ids;
    std::memcpy(&ids, entry.data() + h.attr_size - sizeof(Section), sizeof(ids));
    total_ids += ids.size / 8;
    if (!inside(ids) || ids.size % 8 != 0 || ids.size / 8 > kMaxIds || total_ids > kMaxIds)
      return Refuse("at byte " + std::to_string(at + h.attr_size - sizeof(Section)),
                    "attribute ids",
                    "the ids lie past the file's end, are not whole u64s, or are more than " +
                        std::to_string(kMaxIds) + " in all");
    a.ids.resize(ids.size / 8);
    if (ids.size != 0) std::memcpy(a.ids.data(), bytes_.data() + ids.offset, ids.size);
    attrs_.push_back(std::move(a));
  }
  if (h.features[0] >> kFeatDirFormat & 1)
    return Refuse("at byte 72", "header",
                  "a directory recording's header file (perf record --threads): its samples are in "
                  "the directory's data.N files; `perf data convert` or `perf record` without "
                  "--threads makes one file");
  if (h.data.size == 0)
    return Refuse("at byte 40", "header",
                  "the data section is empty: perf record did not finish writing the file "
                  "(killed?); `perf inject -i FILE -o FIXED` may recover it");
  // The feature sections follow the data: one (offset, size) per feature
  // bit set, in bit order.
  const uint64_t table = h.data.offset + h.data.size;
  uint64_t n = 0;
  for (int bit = 0; bit < kFeatureBits; ++bit) {
    if (!(h.features[bit / 64] >> (bit % 64) & 1)) continue;
    const uint64_t at = table + n++ * sizeof(Section);
    if (at > bytes_.size() || bytes_.size() - at < sizeof(Section))
      return Refuse("at byte " + std::to_string(at), "feature table",
                    "feature " + std::string(FeatureName(bit)) +
                        "'s section lies past the file's end: a truncated file");
    Section s;
    std::memcpy(&s, bytes_.data() + at, sizeof(s));
    if (!inside(s))
      return Refuse("at byte " + std::to_string(at), "feature table",
                    "feature " + std::string(FeatureName(bit)) + " lies past the file's end");
    RETURN_IF_ERROR(ReadFeature(bit, bytes_.subspan(s.offset, s.size), s.offset, &meta_, &attrs_));
  }
  if (meta_.compressed && meta_.compression_type != 1)
    return Refuse("at byte " + std::to_string(table), "feature COMPRESSED",
                  "compression type " + std::to_string(meta_.compression_type) + " is not zstd");
  return TakeRecords(bytes_.subspan(h.data.offset, h.data.size), h.data.offset, Source::kFile);
}

Status Reader::ReadPipeMode() {
  return TakeRecords(bytes_.subspan(kPipeHeaderSize), kPipeHeaderSize, Source::kFile);
}

Status Reader::TakeRecords(std::span<const uint8_t> region, uint64_t base, Source source) {
  size_t off = 0;
  while (off < region.size()) {
    const uint64_t at = base + off;
    if (region.size() - off < sizeof(record::RecordHeader))
      return Refuse(Where(at, source), "record header",
                    std::to_string(region.size() - off) +
                        " bytes left, fewer than a record header: a truncated file");
    record::RecordHeader h;
    std::memcpy(&h, region.data() + off, sizeof(h));
    if (h.size < sizeof(h) || h.size > region.size() - off)
      return Refuse(Where(at, source), RecordName(h.type),
                    "a record of " + std::to_string(h.size) + " bytes where " +
                        std::to_string(region.size() - off) +
                        " are left: a truncated or corrupted file");
    auto rec = region.subspan(off, h.size);
    size_t extra = 0;
    if (h.type >= kUserTypeStart) {
      RETURN_IF_ERROR(TakeUserRecord(h, rec, at, source, &extra));
    } else {
      RETURN_IF_ERROR(QueueKernelRecord(h, rec, at, source));
    }
    if (extra > region.size() - off - h.size)
      return Refuse(Where(at, source), RecordName(h.type),
                    "its " + std::to_string(extra) + " bytes of data run past the end");
    off += h.size + extra;
  }
  // The inflated stream's records, once it is whole (a record may span
  // two COMPRESSED records).
  if (source == Source::kFile && !inflated_.empty())
    return TakeRecords(inflated_, 0, Source::kInflated);
  return OkStatus();
}

Status Reader::TakeUserRecord(const record::RecordHeader& h, std::span<const uint8_t> rec,
                              uint64_t at, Source source, size_t* extra) {
  auto body = rec.subspan(sizeof(h));
  switch (h.type) {
    case kHeaderAttr: {
      if (source != Source::kFile || !pipe_)
        return Refuse(Where(at, source), "HEADER_ATTR",
                      "an attribute record outside a pipe-mode file's stream");
      if (attrs_.size() >= kMaxAttrs)
        return Refuse(Where(at, source), "HEADER_ATTR",
                      "more than " + std::to_string(kMaxAttrs) + " attributes");
      if (body.size() < kAttrSizeVer0)
        return Refuse(Where(at, source), "HEADER_ATTR", "shorter than an attribute");
      uint32_t attr_size;
      std::memcpy(&attr_size, body.data() + 4, 4);
      if (attr_size == 0) attr_size = kAttrSizeVer0;
      if (attr_size > body.size() || attr_size % 8 != 0)
        return Refuse(Where(at + 12, source), "HEADER_ATTR",
                      "attribute size " + std::to_string(attr_size) + " does not fit its record");
      ASSIGN_OR_RETURN(Attr a, ParseAttr(body.first(attr_size), at + 8));
      a.ids.resize((body.size() - attr_size) / 8);  // a u16-sized record: bounded
      if ((pipe_ids_ += a.ids.size()) > kMaxIds)
        return Refuse(Where(at, source), "HEADER_ATTR",
                      "more than " + std::to_string(kMaxIds) + " ids in all");
      if (!a.ids.empty()) std::memcpy(a.ids.data(), body.data() + attr_size, a.ids.size() * 8);
      attrs_.push_back(std::move(a));
      return OkStatus();
    }
    case kHeaderFeature: {
      uint64_t bit;
      if (body.size() < 8)
        return Refuse(Where(at, source), "HEADER_FEATURE", "shorter than its feature id");
      std::memcpy(&bit, body.data(), 8);
      if (bit >= kFeatureBits)
        return Refuse(Where(at, source), "HEADER_FEATURE",
                      "feature " + std::to_string(bit) + " is past perf's 256");
      return ReadFeature(int(bit), body.subspan(8), at + 16, &meta_, &attrs_);
    }
    case kHeaderBuildId:
      return ReadBuildIdRecord(rec, at, &meta_);
    case kHeaderTracingData: {
      uint32_t size;
      if (body.size() < 4)
        return Refuse(Where(at, source), "HEADER_TRACING_DATA", "shorter than its size");
      std::memcpy(&size, body.data(), 4);
      *extra = size;  // the tracepoints' formats follow the record
      ++skipped_["HEADER_TRACING_DATA"];
      return OkStatus();
    }
    case kAuxtrace: {
      uint64_t size;
      if (body.size() < 8) return Refuse(Where(at, source), "AUXTRACE", "shorter than its size");
      std::memcpy(&size, body.data(), 8);
      if (size > bytes_.size())
        return Refuse(Where(at, source), "AUXTRACE", "its data is larger than the file");
      *extra = size_t(size);
      ++skipped_["AUXTRACE"];
      return OkStatus();
    }
    case kCompressed:
    case kCompressed2: {
      if (source != Source::kFile)
        return Refuse(Where(at, source), RecordName(h.type),
                      "a compressed record inside compressed data");
      auto data = body;
      if (h.type == kCompressed2) {
        uint64_t size;
        if (body.size() < 8)
          return Refuse(Where(at, source), "COMPRESSED2", "shorter than its data size");
        std::memcpy(&size, body.data(), 8);
        if (size > body.size() - 8)
          return Refuse(Where(at, source), "COMPRESSED2",
                        "data size " + std::to_string(size) + " overruns the record");
        data = body.subspan(8, size);
      }
      return Inflate(data, at);
    }
    case kFinishedRound:
    case kFinishedInit:
      // The processor takes every record in time order (all are sorted
      // below), which is what perf's rounds guarantee in its window.
      return OkStatus();
    default:
      ++skipped_[RecordName(h.type)];
      return OkStatus();
  }
}

Status Reader::Inflate(std::span<const uint8_t> data, uint64_t at) {
  if (!zstd_) {
    zstd_.reset(ZSTD_createDStream());
    if (!zstd_ || ZSTD_isError(ZSTD_initDStream(zstd_.get())))
      return Status::Error("zstd: no decompression context");
  }
  ZSTD_inBuffer in{data.data(), data.size(), 0};
  const size_t room = ZSTD_DStreamOutSize();
  size_t more = 1;  // until the input is used and zstd holds nothing back
  while (in.pos < in.size || more != 0) {
    const size_t old = inflated_.size();
    if (old + room > max_inflate_)
      return Refuse(
          Where(at, Source::kFile), "COMPRESSED",
          "the records inflate past " + std::to_string(max_inflate_) + " bytes (--max-inflate)");
    inflated_.resize(old + room);
    ZSTD_outBuffer out{inflated_.data() + old, room, 0};
    more = ZSTD_decompressStream(zstd_.get(), &out, &in);
    inflated_.resize(old + out.pos);
    if (ZSTD_isError(more))
      return Refuse(Where(at, Source::kFile), "COMPRESSED",
                    std::string("zstd: ") + ZSTD_getErrorName(more));
    // A frame that goes on in the next record: zstd wants more input.
    if (in.pos == in.size && out.pos < room) break;
  }
  return OkStatus();
}

Status Reader::QueueKernelRecord(const record::RecordHeader& h, std::span<const uint8_t> rec,
                                 uint64_t at, Source source) {
  switch (h.type) {
    case record::kRecordSample:
    case record::kRecordMmap:
    case record::kRecordMmap2:
    case record::kRecordComm:
    case record::kRecordFork:
    case record::kRecordExit:
    case record::kRecordLost:
    case record::kRecordLostSamples:
    case record::kRecordThrottle:
    case record::kRecordUnthrottle:
      break;
    default:
      ++skipped_[RecordName(h.type)];
      return OkStatus();
  }
  if (h.size % 8 != 0)
    return Refuse(Where(at, source), RecordName(h.type),
                  "record size " + std::to_string(h.size) + " is not a multiple of 8");
  if (layouts_.empty()) RETURN_IF_ERROR(Layouts());
  ASSIGN_OR_RETURN(uint32_t attr, AttrOf(h.type, rec, Where(at, source)));
  if (h.type == record::kRecordSample && attr != sampled_) {
    ++other_event_samples_;  // decoded by a layout the import may not read
    return OkStatus();
  }
  Result<Event> e = record::DecodeRecord(rec, layouts_[attr]);
  if (!e.ok()) return Refuse(Where(at, source), RecordName(h.type), e.status().message());
  // A record without a time (no sample_id_all) stays where the file put it.
  const bool timed = (h.type == record::kRecordSample || layouts_[attr].sample_id_all) &&
                     (layouts_[attr].sample_type & PERF_SAMPLE_TIME);
  if (timed) last_time_ = std::max(last_time_, e->time);
  if (e->type == EventType::kMmap2 && e->pid == UINT32_MAX && e->filename.starts_with(kKernelKey))
    kernel_text_ = e->pgoff;
  const uint64_t time = e->time;
  if (items_.size() >= kMaxRecords)
    return Refuse(Where(at, source), RecordName(h.type),
                  "more than " + std::to_string(kMaxRecords) + " records");
  items_.push_back({timed ? time : last_time_, at, source, attr});
  return OkStatus();
}

Status Reader::Layouts() {
  if (!layouts_.empty()) return OkStatus();
  if (attrs_.empty())
    return Status::Error(StatusCode::kDataLoss, "records before any event attribute");
  sampled_ = 0;
  for (uint32_t i = 0; i < attrs_.size(); ++i) {
    if (!IsDummy(attrs_[i])) {
      sampled_ = i;
      break;
    }
  }
  for (uint32_t i = 0; i < attrs_.size(); ++i) {
    const Attr& a = attrs_[i];
    if (a.name.empty()) attrs_[i].name = EventName(a);
    std::string unknown = UnknownSampleFields(a.sample_type);
    if (!unknown.empty() && i == sampled_)
      return Status::Error(
          StatusCode::kUnavailable,
          "event " + attrs_[i].name + " samples fields this reader does not read: " + unknown);
    record::SampleLayout l;
    l.sample_type = a.sample_type & ~TailSampleFields();
    l.regs_user_mask = a.regs_user;
    l.sample_id_all = a.SampleIdAll();
    layouts_.push_back(l);
    for (uint64_t id : a.ids) attr_of_id_[id] = i;
    const Attr& first = attrs_[0];
    if (a.sample_type != first.sample_type || a.SampleIdAll() != first.SampleIdAll() ||
        a.regs_user != first.regs_user)
      shared_layout_ = false;
  }
  if (!shared_layout_) {
    for (const Attr& a : attrs_) {
      if (!(a.sample_type & PERF_SAMPLE_IDENTIFIER))
        return Status::Error(StatusCode::kUnavailable,
                             "events of different sample layouts without PERF_SAMPLE_IDENTIFIER: "
                             "perf cannot tell their records apart either");
    }
  }
  // The sampled event's registers in the order the processor takes them
  // (x86-64's: another architecture's are not these).
  const Attr& s = attrs_[sampled_];
  utsname host;
  foreign_arch_ = !meta_.arch.empty() && uname(&host) == 0 && meta_.arch != host.machine;
  regs_complete_ = !foreign_arch_ && (s.regs_user & record::kUserRegsMask) == record::kUserRegsMask;
  size_t k = 0;
  for (int bit = 0; bit < 64; ++bit) {
    if (!(record::kUserRegsMask >> bit & 1)) continue;
    regs_index_[k++] = std::popcount(s.regs_user & ((uint64_t(1) << bit) - 1));
  }
  return OkStatus();
}

Result<uint32_t> Reader::AttrOf(uint32_t type, std::span<const uint8_t> rec,
                                const std::string& where) const {
  if (attrs_.size() == 1) return uint32_t(0);
  if (shared_layout_ && !(attrs_[0].sample_type & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_ID)))
    return sampled_;  // nothing tells them apart: the layout is one
  uint64_t id = 0;
  if (attrs_[0].sample_type & PERF_SAMPLE_IDENTIFIER || !shared_layout_) {
    // First in a sample, last in another record's trailer.
    if (type != record::kRecordSample && !attrs_[0].SampleIdAll()) return sampled_;
    if (rec.size() < 16) return Refuse(where, RecordName(type), "no room for its identifier");
    std::memcpy(&id, type == record::kRecordSample ? rec.data() + 8 : rec.data() + rec.size() - 8,
                8);
  } else {
    if (type != record::kRecordSample && !attrs_[0].SampleIdAll()) return sampled_;
    Result<Event> e = record::DecodeRecord(rec, layouts_[0]);
    if (!e.ok()) return Refuse(where, RecordName(type), e.status().message());
    id = e->id;
  }
  auto found = attr_of_id_.find(id);
  if (found == attr_of_id_.end()) {
    // perf's synthesized records carry no id.
    if (id == 0 && type != record::kRecordSample) return sampled_;
    return Refuse(where, RecordName(type),
                  "id " + std::to_string(id) + " belongs to no event of the file");
  }
  return found->second;
}

Status Reader::ProcessAll(record::Processor* processor) {
  std::stable_sort(items_.begin(), items_.end(),
                   [](const Item& a, const Item& b) { return a.time < b.time; });
  for (const Item& item : items_) RETURN_IF_ERROR(ProcessOne(item, processor));
  return OkStatus();
}

Status Reader::ProcessOne(const Item& item, record::Processor* processor) {
  std::span<const uint8_t> src = SourceBytes(item.source);
  record::RecordHeader h;
  std::memcpy(&h, src.data() + item.offset, sizeof(h));
  Result<Event> decoded =
      record::DecodeRecord(src.subspan(item.offset, h.size), layouts_[item.attr]);
  if (!decoded.ok())
    return Refuse(Where(item.offset, item.source), RecordName(h.type), decoded.status().message());
  Event& e = *decoded;
  const uint16_t cpumode = h.misc & record::kMiscCpumodeMask;
  switch (e.type) {
    case EventType::kMmap2: {
      if (e.pid == UINT32_MAX || cpumode == PERF_RECORD_MISC_KERNEL) {
        // The kernel's image and modules: kernel frames are named from
        // kallsyms (where _text was is kernel_text_).
        return OkStatus();
      }
      if (e.build_id.empty()) {
        auto id = meta_.build_ids.find(std::string(e.filename));
        if (id != meta_.build_ids.end()) e.build_id = id->second;
      }
      if (e.build_id.empty()) e.build_id = ProvedByInode(e);
      break;
    }
    case EventType::kSample: {
      const Attr& a = attrs_[item.attr];
      if (!(a.sample_type & PERF_SAMPLE_CALLCHAIN)) {
        // The sampled address alone, in the context its mode says.
        chain_.assign(
            {cpumode == PERF_RECORD_MISC_KERNEL ? record::kContextKernel : record::kContextUser,
             e.ip});
        e.callchain = std::span(reinterpret_cast<const uint8_t*>(chain_.data()), chain_.size() * 8);
      } else if ((a.sample_type & PERF_SAMPLE_REGS_USER) &&
                 (a.sample_type & PERF_SAMPLE_STACK_USER)) {
        // Unwound here: a user part the kernel gave too would be twice.
        size_t keep = 0;
        for (; keep < e.CallchainSize(); ++keep)
          if (e.CallchainAt(keep) == record::kContextUser) break;
        e.callchain = e.callchain.first(keep * 8);
      }
      if (e.regs_abi != 0) {
        if (!regs_complete_) {
          e.regs_abi = 0;  // too few registers to unwind from: the kernel part only
        } else if (a.regs_user != record::kUserRegsMask) {
          regs_.resize(record::kUserRegCount * 8);
          for (size_t i = 0; i < record::kUserRegCount; ++i)
            std::memcpy(regs_.data() + i * 8, e.regs.data() + size_t(regs_index_[i]) * 8, 8);
          e.regs = regs_;
        }
      }
      break;
    }
    default:
      break;
  }
  processor->Process(e);
  return OkStatus();
}

std::span<const uint8_t> Reader::ProvedByInode(const Event& e) {
  if (!options_.host_files || e.inode == 0 || !e.filename.starts_with("/")) return {};
  auto [it, fresh] =
      by_inode_.try_emplace({std::string(e.filename), e.dev_major, e.dev_minor, e.inode});
  if (!fresh) return it->second;
  Result<ScopedFd> fd = OpenRegularFile(options_.sysroot + std::string(e.filename));
  struct stat st;
  if (!fd.ok() || fstat(fd->get(), &st) != 0 || st.st_ino != e.inode ||
      major(st.st_dev) != e.dev_major || minor(st.st_dev) != e.dev_minor)
    return {};
  Result<std::vector<uint8_t>> id =
      symbols::ReadBuildId("/proc/self/fd/" + std::to_string(fd->get()));
  if (id.ok()) it->second = std::move(id).value();
  return it->second;
}

std::vector<std::string> Reader::ModuleFiles(std::string_view path,
                                             std::span<const uint8_t> build_id) const {
  // Whole binaries first (perf's cache layout DIR/.build-id/xx/rest/elf,
  // the recorded path, perf's own cache), then separate debug files, whose
  // .eh_frame is often empty (CfiCache goes on past a file without CFI).
  std::vector<std::string> files;
  const std::string hex = HexBytes(build_id);
  if (hex.size() < 3) return files;
  const std::string tail = "/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2);
  for (const std::string& dir : options_.debug_dirs) files.push_back(dir + tail + "/elf");
  if (path.starts_with("/"))
    files.push_back(options_.sysroot.empty() ? std::string(path)
                                             : options_.sysroot + std::string(path));
  if (!options_.perf_cache.empty()) files.push_back(options_.perf_cache + tail + "/elf");
  for (const std::string& dir : options_.debug_dirs) {
    files.push_back(dir + tail + ".debug");
    files.push_back(dir + tail + "/debug");
  }
  return files;
}

void Reader::Describe(const std::string& name, capture::Settings* s) const {
  const Attr& a = attrs_[sampled_];
  s->mode = "import";
  s->recorder = meta_.version.empty() ? "perf (version not recorded)" : "perf " + meta_.version;
  s->command = meta_.cmdline;
  s->host = meta_.hostname;
  s->kernel_release = meta_.os_release;
  s->frequency = a.Freq() ? uint32_t(std::min<uint64_t>(a.period_or_freq, UINT32_MAX)) : 0;
  const bool dwarf =
      (a.sample_type & PERF_SAMPLE_REGS_USER) && (a.sample_type & PERF_SAMPLE_STACK_USER);
  s->call_graph = dwarf ? "dwarf" : (a.sample_type & PERF_SAMPLE_CALLCHAIN) ? "fp" : "none";
  s->stack_copy = dwarf ? a.stack_user : 0;
  s->kernel_frames = (a.sample_type & PERF_SAMPLE_CALLCHAIN) && !a.ExcludeCallchainKernel();
  s->clock = a.UseClockid() ? ClockName(a.clockid)
                            : "perf_clock (perf's default: the kernel's local clock)";
  if (IsClockEvent(a)) {
    s->metric = "cpu";
    s->unit = "nanoseconds";
  } else {
    s->metric = a.name;
    s->unit = "events";
  }
  s->notes.push_back("imported from " + name + (pipe_ ? " (perf.data, pipe mode" : " (perf.data") +
                     (meta_.compressed || !inflated_.empty() ? ", zstd)" : ")"));
  s->notes.push_back("event " + a.name +
                     (a.Freq() ? " at " + std::to_string(a.period_or_freq) + " Hz"
                               : " every " + std::to_string(a.period_or_freq)));
  if (dwarf)
    s->notes.push_back("call graph dwarf: " + std::to_string(a.stack_user) +
                       " bytes of stack per sample, unwound at import by CFI (.eh_frame, "
                       ".debug_frame) from files proved by build ID; a module without them ends "
                       "the stack (no unwind info)");
  if (meta_.nr_cpus_online != 0)
    s->notes.push_back("recorded on " + std::to_string(meta_.nr_cpus_online) + " of " +
                       std::to_string(meta_.nr_cpus_available) + " CPUs" +
                       (meta_.cpu_desc.empty() ? "" : " (" + meta_.cpu_desc + ")"));
  if (!meta_.arch.empty()) s->notes.push_back("architecture " + meta_.arch);
  if (foreign_arch_ && dwarf)
    s->notes.push_back("recorded on " + meta_.arch +
                       ", not this host's architecture: its user stacks are not unwound here");
  size_t proved = 0;
  for (const auto& [file, id] : by_inode_) proved += !id.empty();
  if (proved != 0)
    s->notes.push_back(std::to_string(proved) +
                       " files without a build ID in the recording proved by their device and "
                       "inode on this host");
  for (size_t i = 0; i < attrs_.size(); ++i)
    if (i != sampled_) s->notes.push_back("other event in the file: " + attrs_[i].name);
}

Status Reader::Symbolize(capture::Capture* c) const {
  c->settings.symbols = "later";
  if (!options_.host_files) return OkStatus();
  // The kernel is named from this host's kallsyms only when it is the
  // recording's kernel (build ID) in the same placement (KASLR: _text).
  auto kernel = meta_.build_ids.find(kKernelKey);
  if (kernel != meta_.build_ids.end() && kernel->second == symbols::KernelBuildId() &&
      kernel_text_ != 0 && host_text_ == kernel_text_) {
    c->settings.boot_id = symbols::BootId();
  }
  std::vector<std::vector<std::string>> paths(c->modules.size());
  if (!options_.sysroot.empty()) {
    for (size_t m = 0; m < paths.size(); ++m) {
      const std::string& p = c->strings[c->modules[m].path];
      if (p.starts_with("/")) paths[m].push_back(options_.sysroot + p);
    }
  }
  symbols::AddModuleLayouts(c, paths);
  c->settings.symbols = "symbolize";
  symbols::SymbolizeOptions how;
  how.debug_dirs = options_.debug_dirs;
  if (!options_.perf_cache.empty()) how.debug_dirs.push_back(options_.perf_cache);
  how.sysroot = options_.sysroot;
  how.cache_dir = symbols::DefaultCacheDir();
  auto named = symbols::Symbolize(c, how);
  if (!named.ok()) return named.status().WithContext("symbolizing the import");
  return OkStatus();
}

}  // namespace

bool IsPerfData(std::span<const uint8_t> bytes) {
  uint64_t magic;
  if (bytes.size() < 8) return false;
  std::memcpy(&magic, bytes.data(), 8);
  return magic == kMagic || magic == kMagicSwapped;
}

Result<capture::Capture> ReadPerfData(std::span<const uint8_t> bytes, const std::string& name,
                                      const PerfDataOptions& options) {
  Reader reader(bytes, options);
  return reader.Read(name);
}

}  // namespace microscope::import
