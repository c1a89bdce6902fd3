// perf.data built byte by byte as perf lays it out (file mode with its
// feature sections, pipe mode, zstd-compressed records): what the importer
// takes from each, and the byte offsets and records it names when refusing.
#include "src/import/perf_data.h"

#include <doctest/doctest.h>
#include <zstd.h>

#include <string>
#include <vector>

#include "capture/reader.h"
#include "formats/perf_script.h"
#include "src/import/perf_data_format.h"
#include "tests/unit/record/record_builder.h"

namespace microscope::import {
namespace {

using testing::CommRecord;
using testing::Mmap2Record;
using testing::RecordBuilder;
using testing::SampleRecord;

template <typename T>
void Put(std::vector<uint8_t>* out, T v) {
  const size_t old = out->size();
  out->resize(old + sizeof(T));
  std::memcpy(out->data() + old, &v, sizeof(T));
}

void Append(std::vector<uint8_t>* out, const std::vector<uint8_t>& more) {
  out->insert(out->end(), more.begin(), more.end());
}

// The collector's layout (testing::CollectorLayout), sample_id_all, id 7.
std::vector<uint8_t> AttrBytes() {
  std::vector<uint8_t> a(128);
  const uint32_t type = 1, size = 128;  // software cpu-clock
  const uint64_t sample_type = testing::CollectorLayout().sample_type;
  const uint64_t freq = 999, flags = (1 << 10) | (1 << 18);
  std::memcpy(a.data(), &type, 4);
  std::memcpy(a.data() + 4, &size, 4);
  std::memcpy(a.data() + 16, &freq, 8);
  std::memcpy(a.data() + 24, &sample_type, 8);
  std::memcpy(a.data() + 40, &flags, 8);
  return a;
}

std::vector<uint8_t> FeatureString(const std::string& s) {
  std::vector<uint8_t> out;
  const uint32_t len = uint32_t((s.size() + 1 + 63) / 64 * 64);
  Put(&out, len);
  for (char c : s) out.push_back(uint8_t(c));
  out.resize(4 + len);
  return out;
}

// Records in an order perf may write them (the samples not in time order).
std::vector<uint8_t> Records() {
  std::vector<uint8_t> r;
  Append(&r, CommRecord(10, 10, "worker", true, 100));
  Append(&r, Mmap2Record(10, 0x400000, 0x1000, 0, "/nonexistent/prog", 110));
  Append(&r, SampleRecord(10, 10, 300, {record::kContextUser, 0x400100, 0x400200}));
  Append(&r, SampleRecord(10, 10, 200, {record::kContextUser, 0x400180, 0x400200}));
  Append(&r, RecordBuilder(kFinishedRound).Finish());
  Append(&r, SampleRecord(10, 10, 400, {record::kContextUser, 0x400100, 0x400200}));
  return r;
}

// A file-mode perf.data: header, one attribute and its id, the data, then
// the HOSTNAME and VERSION features.
std::vector<uint8_t> FileMode(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> attr = AttrBytes();
  const uint64_t attrs_at = kFileHeaderSize, attr_size = attr.size() + 16;
  const uint64_t ids_at = attrs_at + attr_size, data_at = ids_at + 8;
  FileHeader h{};
  h.magic = kMagic;
  h.size = kFileHeaderSize;
  h.attr_size = attr_size;
  h.attrs = {attrs_at, attr_size};
  h.data = {data_at, data.size()};
  h.features[0] = (1 << 3) | (1 << 5);
  std::vector<uint8_t> out(sizeof(h));
  std::memcpy(out.data(), &h, sizeof(h));
  Append(&out, attr);
  Put(&out, ids_at);
  Put<uint64_t>(&out, 8);
  Put<uint64_t>(&out, 7);
  Append(&out, data);
  const std::vector<uint8_t> host = FeatureString("testhost"), version = FeatureString("6.1.test");
  const uint64_t table_end = out.size() + 2 * sizeof(Section);
  Put(&out, Section{table_end, host.size()});
  Put(&out, Section{table_end + host.size(), version.size()});
  Append(&out, host);
  Append(&out, version);
  return out;
}

std::vector<uint8_t> PipeMode(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out;
  Put(&out, kMagic);
  Put<uint64_t>(&out, kPipeHeaderSize);
  RecordBuilder attr(kHeaderAttr);
  for (uint8_t b : AttrBytes()) attr.Put(b);
  attr.Put<uint64_t>(7);
  Append(&out, attr.Finish());
  Append(&out, data);
  return out;
}

// The records as one zstd frame cut across two COMPRESSED records.
std::vector<uint8_t> Compressed(const std::vector<uint8_t>& data) {
  std::vector<uint8_t> z(ZSTD_compressBound(data.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), data.data(), data.size(), 3));
  std::vector<uint8_t> out;
  const size_t half = z.size() / 2;
  for (auto [from, to] : {std::pair<size_t, size_t>{0, half}, {half, z.size()}}) {
    RecordBuilder r(kCompressed);
    for (size_t i = from; i < to; ++i) r.Put(z[i]);
    Append(&out, r.Finish());  // not padded: perf's next record is unaligned
  }
  return out;
}

capture::Capture Import(const std::vector<uint8_t>& bytes) {
  PerfDataOptions how;
  how.host_files = false;
  auto c = ReadPerfData(bytes, "test.data", how);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  REQUIRE(capture::ValidateCapture(*c).ok());
  return std::move(c).value();
}

void CheckImported(const capture::Capture& c) {
  REQUIRE(c.samples.size() == 3);
  CHECK(c.samples.time[0] == 200);  // in time order, whatever the file's
  CHECK(c.samples.time[1] == 300);
  CHECK(c.samples.time[2] == 400);
  REQUIRE(c.threads.size() == 1);
  CHECK(c.str(c.threads[0].name) == "worker");
  CHECK(c.settings.call_graph == "fp");
  CHECK(c.settings.metric == "cpu");
  CHECK(c.settings.frequency == 999);
  // Each sample's frames in the mapping of the recorded module.
  bool in_prog = false;
  for (const auto& m : c.modules) in_prog |= c.str(m.path) == "/nonexistent/prog";
  CHECK(in_prog);
}

std::string Refusal(const std::vector<uint8_t>& bytes) {
  PerfDataOptions how;
  how.host_files = false;
  auto c = ReadPerfData(bytes, "bad.data", how);
  REQUIRE_FALSE(c.ok());
  return c.status().message();
}

TEST_CASE("perf.data: file mode, its features and its records in time order") {
  capture::Capture c = Import(FileMode(Records()));
  CheckImported(c);
  CHECK(c.settings.host == "testhost");
  CHECK(c.settings.recorder == "perf 6.1.test");
  CHECK(c.settings.mode == "import");
}

TEST_CASE("perf.data: pipe mode (attributes as records)") {
  CheckImported(Import(PipeMode(Records())));
}

TEST_CASE("perf.data: zstd records, one frame across two COMPRESSED records") {
  CheckImported(Import(FileMode(Compressed(Records()))));
  CheckImported(Import(PipeMode(Compressed(Records()))));
}

TEST_CASE("perf.data: refusals name the byte and the record") {
  const std::vector<uint8_t> good = FileMode(Records());
  // Cut inside the data: the data section lies past the end.
  std::vector<uint8_t> cut(good.begin(), good.begin() + long(good.size() - 200));
  CHECK(Refusal(cut).find("truncated") != std::string::npos);
  // A pipe-mode file cut inside a record.
  std::vector<uint8_t> pipe = PipeMode(Records());
  pipe.resize(pipe.size() - 12);
  const std::string pipe_cut = Refusal(pipe);
  CHECK(pipe_cut.find("at byte ") != std::string::npos);
  CHECK(pipe_cut.find("SAMPLE") != std::string::npos);
  // A sample whose callchain count overruns it: its offset and kind.
  std::vector<uint8_t> bad = good;
  const uint64_t data_at = kFileHeaderSize + 144 + 8;
  size_t at = data_at;
  for (int i = 0; i < 2; ++i) {  // past the COMM and MMAP2 records
    uint16_t size;
    std::memcpy(&size, bad.data() + at + 6, 2);
    at += size;
  }
  const uint64_t huge = 1 << 20;
  std::memcpy(bad.data() + at + 8 + 8 + 8 + 8 + 8 + 8 + 8, &huge, 8);  // callchain nr
  const std::string why = Refusal(bad);
  CHECK(why.find("at byte " + std::to_string(at) + " (SAMPLE)") != std::string::npos);
  // Not perf's magic, or another endianness.
  std::vector<uint8_t> other = good;
  std::reverse(other.begin(), other.begin() + 8);
  CHECK(Refusal(other).find("big-endian") != std::string::npos);
}

TEST_CASE("perf script text: samples, threads and frames") {
  const std::string text =
      "# a comment perf script -I would write\n"
      "prog 10/11 [001] 100.000100:    1000000 cpu-clock:pppH: \n"
      "\t    400100 hot+0x10 (/usr/bin/prog)\n"
      "\t    400200 main+0x20 (/usr/bin/prog)\n"
      "\tffffffff81000000 clear_page_erms+0x7 ([kernel.kallsyms])\n"
      "\n"
      // Without a callchain perf pads the command to 16 columns.
      "         my prog 10/12 [000] 100.000300:    3000000 cpu-clock:pppH:  400300 cold+0x1 "
      "(/usr/bin/prog)\n"
      "\n";
  REQUIRE(formats::LooksLikePerfScript(text));
  auto c = formats::ReadPerfScript(text);
  REQUIRE_MESSAGE(c.ok(), c.status().message());
  REQUIRE(c->samples.size() == 2);
  CHECK(c->samples.weight[0] == 1000000);
  CHECK(c->samples.weight[1] == 3000000);
  CHECK(c->samples.time[1] - c->samples.time[0] == 200000);
  CHECK(c->settings.metric == "cpu");
  REQUIRE(c->threads.size() == 2);
  CHECK(c->str(c->threads[1].name) == "my prog");
  CHECK(c->threads[1].tid == 12);
  CHECK(c->settings.kernel_frames);
  auto bad = formats::ReadPerfScript("prog 10/11 [001] 100.000100: 1 cpu-clock:\n\tnot a frame\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().starts_with("line 2: "));
  CHECK_FALSE(formats::LooksLikePerfScript("main;run;hot 12\n"));
}

}  // namespace
}  // namespace microscope::import
