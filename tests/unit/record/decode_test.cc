#include <doctest.h>

#include <random>

#include "src/record/collector.h"
#include "src/record/decode.h"
#include "tests/unit/record/record_builder.h"

using namespace microscope;
using namespace microscope::record;
using namespace microscope::testing;

TEST_CASE("Decode: a sample with a kernel and user call chain") {
  auto bytes = SampleRecord(
      10, 11, 5000, {uint64_t(-128), 0xffffffff81000010, uint64_t(-512), 0x401000, 0x402000});
  auto e = DecodeRecord(bytes, CollectorLayout());
  REQUIRE(e.ok());
  CHECK(e->type == EventType::kSample);
  CHECK(e->pid == 10);
  CHECK(e->tid == 11);
  CHECK(e->time == 5000);
  CHECK(e->period == 1000000);
  REQUIRE(e->CallchainSize() == 5);
  CHECK(e->CallchainAt(1) == 0xffffffff81000010);
  CHECK(e->CallchainAt(4) == 0x402000);
}

TEST_CASE("Decode: MMAP2 with and without a build ID, COMM, FORK, EXIT") {
  // Events view their record's bytes: keep each record alive while checking.
  auto m_bytes = Mmap2Record(3, 0x400000, 0x1000, 0x2000, "/usr/bin/x", 77, {1, 2, 3});
  auto m = DecodeRecord(m_bytes, CollectorLayout());
  REQUIRE(m.ok());
  CHECK(m->type == EventType::kMmap2);
  CHECK(m->addr == 0x400000);
  CHECK(m->pgoff == 0x2000);
  CHECK(m->filename == "/usr/bin/x");
  CHECK(m->build_id.size() == 3);
  CHECK(m->time == 77);
  auto m2_bytes = Mmap2Record(3, 0x400000, 0x1000, 0, "/lib/y.so", 78);
  auto m2 = DecodeRecord(m2_bytes, CollectorLayout());
  REQUIRE(m2.ok());
  CHECK(m2->build_id.empty());
  CHECK(m2->filename == "/lib/y.so");

  auto c_bytes = CommRecord(3, 4, "worker", true, 90);
  auto c = DecodeRecord(c_bytes, CollectorLayout());
  REQUIRE(c.ok());
  CHECK(c->comm == "worker");
  CHECK(c->exec);
  CHECK(c->time == 90);
  // A thread renamed by another (its trailer the writer's), and perf's
  // synthesized records (a zero trailer): the record's own task.
  for (uint32_t writer : {9u, 0u}) {
    RecordBuilder renamed(kRecordComm);
    renamed.Put<uint32_t>(3).Put<uint32_t>(4).PutString("renamed").Trailer(writer, writer, 95);
    auto r = DecodeRecord(renamed.Finish(), CollectorLayout());
    REQUIRE(r.ok());
    CHECK(r->pid == 3);
    CHECK(r->tid == 4);
    CHECK(r->time == 95);
  }

  auto f = DecodeRecord(TaskRecord(kRecordFork, 5, 3, 5, 3, 100), CollectorLayout());
  REQUIRE(f.ok());
  CHECK(f->type == EventType::kFork);
  CHECK(f->ppid == 3);
  auto x = DecodeRecord(TaskRecord(kRecordExit, 5, 3, 5, 3, 200), CollectorLayout());
  REQUIRE(x.ok());
  CHECK(x->type == EventType::kExit);
  CHECK(x->time == 200);
}

TEST_CASE("Decode: truncated and inconsistent records are errors, not crashes") {
  auto good = SampleRecord(1, 1, 1, {uint64_t(-512), 0x1000, 0x2000});
  SUBCASE("header size beyond the bytes") {
    auto r = DecodeRecord(std::span(good).first(good.size() - 8), CollectorLayout());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("header size") != std::string::npos);
  }
  SUBCASE("header size not a multiple of 8") {
    auto bad = good;
    uint16_t size = uint16_t(bad.size() - 4);
    std::memcpy(bad.data() + 6, &size, 2);
    CHECK_FALSE(DecodeRecord(bad, CollectorLayout()).ok());
  }
  SUBCASE("callchain count overruns the record") {
    auto bad = good;
    uint64_t nr = 1000;
    std::memcpy(bad.data() + 8 + 48, &nr, 8);
    auto r = DecodeRecord(bad, CollectorLayout());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("overruns") != std::string::npos);
  }
  SUBCASE("shrunk record cuts a field") {
    auto bad = good;
    bad.resize(40);
    uint16_t size = 40;
    std::memcpy(bad.data() + 6, &size, 2);
    auto r = DecodeRecord(bad, CollectorLayout());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("truncated") != std::string::npos);
  }
  SUBCASE("mmap2 filename without NUL") {
    auto m = Mmap2Record(3, 0x400000, 0x1000, 0, "/lib/abcdefg", 1);
    // Overwrite the filename and its padding (and the trailer) with non-NUL bytes.
    for (size_t i = 8 + 56; i < m.size(); ++i) m[i] = 'a';
    CHECK_FALSE(DecodeRecord(m, CollectorLayout()).ok());
  }
  SUBCASE("unknown record type is skipped as other") {
    RecordBuilder b(99);
    b.Put<uint64_t>(0);
    auto r = DecodeRecord(b.Finish(), CollectorLayout());
    REQUIRE(r.ok());
    CHECK(r->type == EventType::kOther);
  }
  SUBCASE("every truncation of every record kind fails cleanly") {
    std::vector<std::vector<uint8_t>> records = {
        good, Mmap2Record(3, 0x400000, 0x1000, 0, "/lib/y.so", 1, {9, 9}),
        CommRecord(3, 4, "w", false, 1), TaskRecord(kRecordFork, 5, 3, 5, 3, 1)};
    for (auto rec : records) {
      for (size_t n = 8; n < rec.size(); n += 8) {
        auto cut = rec;
        cut.resize(n);
        uint16_t size = uint16_t(n);
        std::memcpy(cut.data() + 6, &size, 2);
        CHECK_FALSE(DecodeRecord(cut, CollectorLayout()).ok());
      }
    }
  }
}

TEST_CASE("Ring copy: records wrapping the end of the data area are joined") {
  std::vector<uint8_t> ring(256, 0);
  auto a = SampleRecord(1, 1, 10, {uint64_t(-512), 0x1000});
  auto b = SampleRecord(1, 1, 20, {uint64_t(-512), 0x1000, 0x2000, 0x3000});
  // Place `a` ending near the end and `b` wrapping around.
  uint64_t tail = 256 - a.size() - 16;
  uint64_t pos = tail;
  for (auto* rec : {&a, &b}) {
    for (uint8_t byte : *rec) ring[pos++ % 256] = byte;
  }
  std::vector<uint8_t> arena;
  RingCopyStats stats;
  uint64_t new_tail = CopyRingRecords(ring, tail, pos, &arena, &stats);
  CHECK(new_tail == pos);
  CHECK(stats.samples == 2);
  CHECK(stats.errors == 0);
  REQUIRE(arena.size() == a.size() + b.size());
  auto eb = DecodeRecord(std::span(arena).subspan(a.size()), CollectorLayout());
  REQUIRE(eb.ok());
  CHECK(eb->time == 20);
  CHECK(eb->CallchainAt(3) == 0x3000);
}

TEST_CASE("Ring copy: a corrupt header drops the rest of the read and is counted") {
  std::vector<uint8_t> ring(256, 0);
  auto a = SampleRecord(1, 1, 10, {uint64_t(-512), 0x1000});
  std::memcpy(ring.data(), a.data(), a.size());
  uint16_t bad_size = 4;
  std::memcpy(ring.data() + a.size() + 6, &bad_size, 2);
  std::vector<uint8_t> arena;
  RingCopyStats stats;
  CHECK(CopyRingRecords(ring, 0, a.size() + 64, &arena, &stats) == a.size() + 64);
  CHECK(stats.samples == 1);
  CHECK(stats.errors == 1);
}

TEST_CASE("Decode: random bytes and random corruptions never crash the decoder") {
  std::mt19937 rng(99);
  std::vector<std::vector<uint8_t>> seeds = {
      SampleRecord(1, 2, 3, {uint64_t(-128), 0xffffffff81000000, uint64_t(-512), 0x1000, 0x2000}),
      Mmap2Record(3, 0x400000, 0x1000, 0, "/lib/y.so", 1, {9, 9}),
      Mmap2Record(3, 0x400000, 0x1000, 0, "/lib/zzz.so", 1), CommRecord(3, 4, "worker", true, 1),
      TaskRecord(kRecordExit, 5, 3, 5, 3, 1)};
  int decoded = 0;
  for (int round = 0; round < 50000; ++round) {
    std::vector<uint8_t> rec = seeds[rng() % seeds.size()];
    int flips = 1 + int(rng() % 6);
    for (int i = 0; i < flips; ++i) rec[rng() % rec.size()] = uint8_t(rng());
    auto e = DecodeRecord(rec, CollectorLayout());
    if (e.ok()) {
      ++decoded;
      // Views must lie inside the record.
      auto inside = [&](std::span<const uint8_t> v) {
        return v.empty() ||
               (v.data() >= rec.data() && v.data() + v.size() <= rec.data() + rec.size());
      };
      CHECK(inside(e->callchain));
      CHECK(inside(e->build_id));
      CHECK(inside(
          std::span(reinterpret_cast<const uint8_t*>(e->filename.data()), e->filename.size())));
    }
  }
  CHECK(decoded > 0);
}

TEST_CASE("Ring copy: a head more than a ring ahead of the tail is refused") {
  std::vector<uint8_t> ring(64, 0);
  std::vector<uint8_t> arena;
  RingCopyStats stats;
  CHECK(CopyRingRecords(ring, 0, 4096, &arena, &stats) == 4096);
  CHECK(stats.errors == 1);
  CHECK(arena.empty());
}

namespace {

// A sample with three user registers and `copy` bytes of user stack, of
// which the kernel filled `filled` (byte i is i * 3 + 1). `regs`: false,
// a sample with no user context (abi 0, stack size 0, nothing after).
std::vector<uint8_t> StackSample(uint64_t id, uint64_t time, uint32_t copy, uint32_t filled,
                                 bool regs = true) {
  RecordBuilder b(record::kRecordSample, PERF_RECORD_MISC_USER);
  b.Put<uint64_t>(id).Put<uint64_t>(0x401000);
  b.Put<uint32_t>(10).Put<uint32_t>(11).Put(time).Put<uint32_t>(0).Put<uint32_t>(0);
  b.Put<uint64_t>(1000000).Put<uint64_t>(1).Put<uint64_t>(0x401000);
  if (!regs) {
    b.Put<uint64_t>(0).Put<uint64_t>(0);  // abi none; stack size 0
    return b.Finish();
  }
  b.Put<uint64_t>(2).Put<uint64_t>(0x7ff0).Put<uint64_t>(0x7ff8).Put<uint64_t>(0x401000);
  b.Put<uint64_t>(copy);
  for (uint32_t i = 0; i < copy; ++i) b.Put<uint8_t>(i < filled ? uint8_t(i * 3 + 1) : 0xEE);
  b.Put<uint64_t>(filled);
  return b.Finish();
}

SampleLayout StackLayout() {
  SampleLayout l = CollectorLayout();
  l.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
  l.regs_user_mask = 0x7;
  return l;
}

// StackSample's layout: the callchain's length at byte 56, tid 11 at byte
// 28, three registers (the second, 0x7ff8, as the stack pointer).
constexpr StackTrim kSampleTrim{.callchain_at = 56, .tid_at = 28, .regs = 3, .sp_index = 1};

}  // namespace

TEST_CASE("Ring copy: a sample's user stack is copied only as far as the kernel filled it") {
  for (size_t at :
       {size_t(0), size_t(512 - 48), size_t(512 - 200)}) {  // whole, and wrapping the end
    CAPTURE(at);
    auto a = StackSample(7, 10, 256, 20);
    auto none = StackSample(7, 11, 256, 0, /*regs=*/false);
    auto raw = StackSample(9, 12, 256, 20);  // a BPF output event's id: left whole
    std::vector<uint8_t> all = a;
    all.insert(all.end(), none.begin(), none.end());
    std::vector<uint8_t> ring_small(1024);
    // Lay the records into a 1024-byte ring from `at`, wrapping.
    for (size_t i = 0; i < all.size(); ++i) ring_small[(at + i) % 1024] = all[i];
    std::vector<uint8_t> arena;
    RingCopyStats stats;
    const uint64_t ids[] = {9};
    CHECK(CopyRingRecords(ring_small, at, at + all.size(), &arena, &stats, 256, ids, kSampleTrim) ==
          at + all.size());
    CHECK(stats.errors == 0);
    CHECK(stats.samples == 2);
    // 256 bytes of stack became 24 (20 filled, rounded up to 8).
    REQUIRE(arena.size() == a.size() - 256 + 24 + none.size());
    auto e = DecodeRecord(std::span(arena).first(a.size() - 256 + 24), StackLayout());
    REQUIRE(e.ok());
    CHECK(e->time == 10);
    REQUIRE(e->stack.size() == 20);
    for (size_t i = 0; i < 20; ++i) CHECK(e->stack[i] == uint8_t(i * 3 + 1));
    CHECK(e->regs.size() == 24);
    auto n = DecodeRecord(std::span(arena).subspan(a.size() - 256 + 24), StackLayout());
    REQUIRE(n.ok());
    CHECK(n->time == 11);
    CHECK(n->stack.empty());
    // An output event's record is never cut, whatever its bytes look like.
    std::vector<uint8_t> raw_arena;
    CHECK(CopyRingRecords(raw, 0, raw.size(), &raw_arena, &stats, 256, ids, kSampleTrim) ==
          raw.size());
    CHECK(raw_arena == raw);
  }
}

TEST_CASE("Ring copy: a stack the kernel gave less room than was asked for is cut as well") {
  // A 64 KiB copy never fits a record's 16-bit size: the kernel gives what
  // fits, so the record's stack size is below the one asked for.
  auto a = StackSample(7, 10, 200, 20);
  std::vector<uint8_t> arena;
  RingCopyStats stats;
  CHECK(CopyRingRecords(a, 0, a.size(), &arena, &stats, 256, {}, kSampleTrim) == a.size());
  CHECK(stats.errors == 0);
  REQUIRE(arena.size() == a.size() - 200 + 24);
  auto e = DecodeRecord(arena, StackLayout());
  REQUIRE(e.ok());
  REQUIRE(e->stack.size() == 20);
  for (size_t i = 0; i < 20; ++i) CHECK(e->stack[i] == uint8_t(i * 3 + 1));
  // Without the samples' layout, or with a stack larger than asked for (not
  // a sampling event's), the record is copied whole.
  for (uint32_t asked : {uint32_t(256), uint32_t(128)}) {
    std::vector<uint8_t> whole;
    CHECK(CopyRingRecords(a, 0, a.size(), &whole, &stats, asked, {},
                          asked == 256 ? StackTrim{} : kSampleTrim) == a.size());
    CHECK(whole == a);
  }
}

TEST_CASE("Ring copy: a sample's stack is cut at the end its thread's walks read") {
  // StackSample: 20 of 256 bytes filled.
  StackExtents extents;
  StackTrim trim = kSampleTrim;
  trim.extents = &extents;
  auto copy = [&](const std::vector<uint8_t>& rec, size_t at) {
    std::vector<uint8_t> ring(1024);
    for (size_t i = 0; i < rec.size(); ++i) ring[(at + i) % ring.size()] = rec[i];
    std::vector<uint8_t> arena;
    RingCopyStats stats;
    CHECK(CopyRingRecords(ring, at, at + rec.size(), &arena, &stats, 256, {}, trim) ==
          at + rec.size());
    CHECK(stats.errors == 0);
    return arena;
  };
  const auto rec = StackSample(7, 10, 256, 20);
  for (size_t at : {size_t(0), size_t(1024 - 200)}) {
    CAPTURE(at);
    extents = {};
    // Nothing learned: as far as the kernel filled it.
    auto whole = copy(rec, at);
    auto e = DecodeRecord(whole, StackLayout());
    REQUIRE(e.ok());
    CHECK(e->stack.size() == 20);
    // Learned 12 bytes above the stack pointer: 12 kept (16 of record).
    extents.Learn(11, 0x7ff8 + 12);
    auto cut = copy(rec, at);
    CHECK(cut.size() == whole.size() - 8);
    e = DecodeRecord(cut, StackLayout());
    REQUIRE(e.ok());
    REQUIRE(e->stack.size() == 12);
    for (size_t i = 0; i < 12; ++i) CHECK(e->stack[i] == uint8_t(i * 3 + 1));
    CHECK(e->tid == 11);
    CHECK(e->time == 10);
    // An end beyond what was filled keeps what was filled.
    extents.Learn(11, 0x7ff8 + 4096);
    e = DecodeRecord(copy(rec, at), StackLayout());
    REQUIRE(e.ok());
    CHECK(e->stack.size() == 20);
    // Another thread's end, or one below the stack pointer, cuts nothing.
    extents = {};
    extents.Learn(12, 0x7ff8 + 8);
    extents.Learn(11, 0x7ff0);
    e = DecodeRecord(copy(rec, at), StackLayout());
    REQUIRE(e.ok());
    CHECK(e->stack.size() == 20);
    // Forgotten: whole again.
    extents.Learn(11, 0x7ff8 + 8);
    extents.Forget(11);
    e = DecodeRecord(copy(rec, at), StackLayout());
    REQUIRE(e.ok());
    CHECK(e->stack.size() == 20);
  }
  // A sample with no user context is left as it is.
  extents.Learn(11, 0x7ff8 + 8);
  const auto none = StackSample(7, 11, 256, 0, /*regs=*/false);
  CHECK(copy(none, 0) == none);
}
