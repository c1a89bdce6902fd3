#include <doctest.h>

#include <cstring>
#include <vector>

#include "src/probes/abi.h"
#include "src/probes/probe_source.h"
#include "src/probes/ring_records.h"
#include "src/probes/site_entries.h"
#include "src/probes/tsc_clock.h"

using namespace microscope;
using namespace microscope::probes;

namespace {

// A site entry as the SDK's assembler lays it out.
std::vector<uint8_t> Entry(uint8_t kind, const std::string& name, const std::string& file,
                           uint32_t line) {
  const size_t size = (sizeof(microscope_site) + name.size() + file.size() + 2 + 7) / 8 * 8;
  std::vector<uint8_t> out(size, 0);
  microscope_site h{};
  h.magic = MICROSCOPE_SITE_MAGIC;
  h.kind = kind;
  h.size = uint16_t(size);
  h.line = line;
  h.name_len = uint16_t(name.size());
  h.file_len = uint16_t(file.size());
  std::memcpy(out.data(), &h, sizeof(h));
  std::memcpy(out.data() + sizeof(h), name.c_str(), name.size() + 1);
  std::memcpy(out.data() + sizeof(h) + name.size() + 1, file.c_str(), file.size() + 1);
  return out;
}

void Append(std::vector<uint8_t>* to, const std::vector<uint8_t>& more) {
  to->insert(to->end(), more.begin(), more.end());
}

uint64_t Header(uint64_t site, uint64_t op, uint64_t words) {
  return site | (op << 48) | (words << 56);
}

}  // namespace

TEST_CASE("Probes: a sites section's entries, padding between them skipped") {
  std::vector<uint8_t> bytes = Entry(MICROSCOPE_KIND_ZONE, "parse", "a.c", 12);
  bytes.resize(bytes.size() + 16, 0);  // another object's alignment
  Append(&bytes, Entry(MICROSCOPE_KIND_MARK, "tick", "b.cc", 7));
  SiteSection s = ParseSiteSection(bytes, 0x4000);
  CHECK(s.malformed == 0);
  REQUIRE(s.sites.size() == 2);
  CHECK(s.sites[0].address == 0x4000);
  CHECK(s.sites[0].name == "parse");
  CHECK(s.sites[0].file == "a.c");
  CHECK(s.sites[0].line == 12);
  CHECK(s.sites[0].kind == MICROSCOPE_KIND_ZONE);
  CHECK(s.sites[1].address == 0x4000 + 32 + 16);
  CHECK(s.sites[1].name == "tick");
}

TEST_CASE("Probes: a malformed site entry is counted and the next one still read") {
  struct Case {
    const char* what;
    void (*spoil)(std::vector<uint8_t>&);
    const char* error;
  };
  const Case cases[] = {
      {"unknown kind", [](std::vector<uint8_t>& b) { b[4] = 9; }, "site of unknown kind 9"},
      {"size past the section", [](std::vector<uint8_t>& b) { b[6] = 0xf8, b[7] = 0x7f; },
       "site entry of 32760 bytes"},
      {"size not a multiple of 8", [](std::vector<uint8_t>& b) { b[6] = 20; },
       "site entry of 20 bytes"},
      {"name past the entry", [](std::vector<uint8_t>& b) { b[12] = 40; },
       "site name and file (40 and 3 bytes) overrun the entry"},
      {"name without its end", [](std::vector<uint8_t>& b) { b[16 + 5] = 'x'; },
       "site name or file does not end where its length says"},
      {"no name", [](std::vector<uint8_t>& b) { b[12] = 0, b[16] = 0; },
       "site name or file does not end where its length says"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.what);
    std::vector<uint8_t> bytes = Entry(MICROSCOPE_KIND_ZONE, "parse", "a.c", 12);
    k.spoil(bytes);
    Append(&bytes, Entry(MICROSCOPE_KIND_MARK, "tick", "b.cc", 7));
    SiteSection s = ParseSiteSection(bytes, 0x1000);
    CHECK(s.malformed == 1);
    CHECK(s.first_error.find(k.error) == 0);
    CHECK(s.first_error.find("at 0x1000") != std::string::npos);
    REQUIRE(s.sites.size() == 1);
    CHECK(s.sites[0].name == "tick");
  }
  // Cut anywhere: never a read past the bytes.
  std::vector<uint8_t> bytes = Entry(MICROSCOPE_KIND_ZONE, "parse", "a.c", 12);
  for (size_t n = 0; n < bytes.size(); ++n) {
    SiteSection s = ParseSiteSection(std::span<const uint8_t>(bytes.data(), n), 0);
    CHECK(s.sites.empty());
  }
}

TEST_CASE("Probes: a run-time slot is read once published, refused when malformed") {
  std::vector<uint8_t> slot(MICROSCOPE_RUNTIME_SITE_SIZE, 0);
  CHECK(!ParseRuntimeSlot(slot, 0x9000).value().has_value());  // not written yet
  std::vector<uint8_t> e = Entry(MICROSCOPE_KIND_ZONE, "py.handler", "app.py", 33);
  std::memcpy(slot.data(), e.data(), e.size());
  uint16_t size = MICROSCOPE_RUNTIME_SITE_SIZE;
  std::memcpy(slot.data() + 6, &size, 2);
  auto site = ParseRuntimeSlot(slot, 0x9000);
  REQUIRE(site.ok());
  REQUIRE(site.value().has_value());
  CHECK(site.value()->name == "py.handler");
  CHECK(site.value()->file == "app.py");
  size = 64;
  std::memcpy(slot.data() + 6, &size, 2);
  auto bad = ParseRuntimeSlot(slot, 0x9000);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("claims 64 bytes, not 256") != std::string::npos);
}

TEST_CASE("Probes: ring words decode into records, the thread from its records") {
  double v = 2.5;
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  uint64_t text[2] = {};
  std::memcpy(text, "/api/users", 10);
  const std::vector<uint64_t> words = {
      Header(0, MICROSCOPE_OP_THREAD, 3),
      100,
      4242,
      Header(0x5000, MICROSCOPE_OP_BEGIN, 2),
      110,
      Header(0x5040, MICROSCOPE_OP_COUNTER, 3),
      120,
      bits,
      Header(0x5080, MICROSCOPE_OP_LABEL_TEXT, 5),
      130,
      10,
      text[0],
      text[1],
      Header(0x5080, MICROSCOPE_OP_LABEL_INT, 3),
      135,
      uint64_t(-7),
      Header(0x5000, MICROSCOPE_OP_END, 2),
      140,
  };
  uint32_t tid = 0;
  RingChunk chunk = DecodeRingWords(words, &tid);
  CHECK(chunk.error.empty());
  CHECK(tid == 4242);
  REQUIRE(chunk.records.size() == 5);
  CHECK(chunk.records[0].site == 0x5000);
  CHECK(chunk.records[0].op == MICROSCOPE_OP_BEGIN);
  CHECK(chunk.records[0].time == 110);
  CHECK(chunk.records[0].tid == 4242);
  CHECK(chunk.records[1].operand == bits);
  CHECK(chunk.records[2].text == "/api/users");
  CHECK(int64_t(chunk.records[3].operand) == -7);
  CHECK(chunk.records[4].op == MICROSCOPE_OP_END);
}

TEST_CASE("Probes: malformed ring words stop the decoding, naming the word") {
  struct Case {
    const char* what;
    std::vector<uint64_t> words;
    const char* error;
    size_t word;
  };
  const Case cases[] = {
      {"a record before its thread",
       {Header(0x5000, MICROSCOPE_OP_BEGIN, 2), 1},
       "record before the ring named its thread",
       0},
      {"too few words",
       {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 7, Header(0x5000, 1, 1)},
       "record of 1 words with 1 left",
       3},
      {"past the words",
       {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 7, Header(0x5000, 1, 4), 1},
       "record of 4 words with 2 left",
       3},
      {"unknown operation",
       {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 7, Header(0x5000, 77, 2), 1},
       "record of unknown operation 77",
       3},
      {"wrong size for its operation",
       {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 7, Header(0x5000, MICROSCOPE_OP_MARK, 3), 1, 0},
       "record of operation 3 has 3 words, not 2",
       3},
      {"text longer than kept",
       {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 7, Header(0x5000, MICROSCOPE_OP_LABEL_TEXT, 4), 1,
        500, 0},
       "label text record of 4 words",
       3},
      {"a thread record with a site",
       {Header(0x10, MICROSCOPE_OP_THREAD, 3), 1, 7},
       "thread record with a site",
       0},
      {"a record without a site",
       {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 7, Header(0, MICROSCOPE_OP_MARK, 2), 1},
       "record without a site",
       3},
      {"tid 0", {Header(0, MICROSCOPE_OP_THREAD, 3), 1, 0}, "thread record of tid 0", 0},
  };
  for (const Case& k : cases) {
    CAPTURE(k.what);
    uint32_t tid = 0;
    RingChunk chunk = DecodeRingWords(k.words, &tid);
    CHECK(chunk.error == k.error);
    CHECK(chunk.error_word == k.word);
  }
}

TEST_CASE("Probes: time stamp counter readings on the monotonic clock") {
  TscClock clock;
  CHECK(clock.ToNs(5) == 0);  // one point says nothing of the slope
  clock.Add({1000, 1'000'000'000});
  clock.Add({1500, 1'000'400'000});  // too close: skipped
  clock.Add({4000, 1'002'000'000});  // 1.5 GHz-like: 2e6 ns per 3000 ticks
  clock.Add({7000, 1'006'000'000});
  CHECK(clock.points() == 3);
  CHECK(clock.ToNs(1000) == 1'000'000'000);
  CHECK(clock.ToNs(2500) == 1'001'000'000);
  CHECK(clock.ToNs(5500) == 1'004'000'000);   // on the second line
  CHECK(clock.ToNs(10000) == 1'010'000'000);  // past the last: its line
  CHECK(clock.ToNs(0) == 999'333'333);        // before the first: its line
  // The machine's own counter runs with its clock.
  TscClock live;
  TscClock::Point a = TscClock::Measure();
  live.Add(a);
  while (TscClock::Measure().ns < a.ns + 2'000'000) {
  }
  TscClock::Point b = TscClock::Measure();
  live.Add(b);
  if (b.tsc != 0) CHECK(live.ToNs(b.tsc) == b.ns);
}

TEST_CASE("Probes: selections, and the lines a program's control block carries") {
  CHECK(Selected("all", "anything"));
  CHECK(Selected("db.*,http.get", "db.query"));
  CHECK(Selected("db.*,http.get", "http.get"));
  CHECK(!Selected("db.*,http.get", "http.post"));
  CHECK(!Selected("parse", "parser"));
  CHECK(SelectionLines("all").value() == "*\n");
  CHECK(SelectionLines("db.*,parse").value() == "db.*\nparse\n");
  CHECK(SelectionLines("a,,b").status().message() == "an empty name in the selection");
  CHECK(SelectionLines("a*b").status().message() == "'a*b': '*' only ends a prefix");
  CHECK(!SelectionLines(std::string(600, 'x')).ok());
}
