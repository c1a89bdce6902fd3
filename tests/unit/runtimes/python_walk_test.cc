#include <doctest.h>
#include <linux/types.h>

#include <cstddef>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "src/record/pump.h"
#include "src/runtimes/python/python.h"
#include "src/runtimes/python/walk.h"
#include "tests/unit/record/record_builder.h"
#include "tests/unit/runtimes/walk_bytes.h"

using namespace microscope;
using namespace microscope::runtimes::python;
using microscope::testing::RecordBuilder;

namespace {

// A walk record as bpf/python.bpf.c writes it.
std::vector<uint8_t> WalkBytes(uint32_t pid, uint32_t tid, uint8_t status,
                               const std::vector<py_frame>& frames) {
  return testing::WalkRecordBytes(MICROSCOPE_RUNTIME_PYTHON, pid, tid, status, frames);
}

py_frame Frame(uint64_t code, uint32_t instr = 0) {
  return {code, code + 1, code + 2, 10, instr};
}
py_frame Shim(uint64_t address) {
  return {address, 0, 0, 0, MICROSCOPE_PY_SHIM};
}

// Splices with frame ids standing for names: natives are 0..99, Python
// frames 1000 + their code, markers 9999. Every test splices with the same
// scratch, as a source does: nothing of one stack may reach the next.
std::vector<capture::FrameId> Spliced(const Walk* walk, std::vector<capture::FrameId> frames,
                                      std::vector<uint8_t> tags, std::vector<uint64_t> sps,
                                      std::string* reason = nullptr) {
  SpliceHooks hooks;
  hooks.frame = [](const WalkFrame& f) { return capture::FrameId(1000 + f.code); };
  hooks.marker = [&](const std::string& why) {
    if (reason) *reason = why;
    return capture::FrameId(9999);
  };
  static SpliceScratch scratch;
  SpliceWalk(walk, "no walk", &frames, tags, sps, 1, hooks, &scratch);
  return frames;
}

}  // namespace

TEST_CASE("Python walk: records are read back, and refused when short or foreign") {
  auto bytes = WalkBytes(10, 11, MICROSCOPE_PY_WALKED,
                         {Frame(1, 6), Frame(2, MICROSCOPE_PY_ENTRY | 8), Shim(0x7ff0)});
  bytes.resize(bytes.size() + 4);  // the raw sample's padding
  Result<Walk> w = ParseWalk(bytes);
  REQUIRE(w.ok());
  CHECK(w->pid == 10);
  CHECK(w->tid == 11);
  REQUIRE(w->frames.size() == 3);
  CHECK(w->frames[0].instr == 6);
  CHECK(w->frames[0].qualname == 2);
  CHECK(w->frames[1].entry);
  CHECK(w->frames[1].instr == 8);
  CHECK(w->frames[2].shim);
  CHECK(w->frames[2].code == 0x7ff0);
  CHECK_FALSE(ParseWalk(std::span(bytes).first(10)).ok());
  CHECK_FALSE(ParseWalk(std::span(bytes).first(bytes.size() - 20)).ok());  // frames cut off
  auto foreign = bytes;
  foreign[0] ^= 1;
  CHECK(ParseWalk(foreign).status().message().find("magic") != std::string::npos);
  auto lying = WalkBytes(1, 1, 0, {});
  lying[offsetof(walk_header, nframes) + 1] = 0xff;  // nframes past the maximum
  CHECK_FALSE(ParseWalk(lying).ok());
  Walk ended;
  CHECK(WalkEndReason(ended).empty());
  ended.status = MICROSCOPE_PY_SEVERAL;
  CHECK(WalkEndReason(ended).find("several") != std::string::npos);
  ended.status = MICROSCOPE_PY_TRUNCATED;
  ended.bound = 1024;
  CHECK(WalkEndReason(ended) == "cut at 1024 Python frames (record --runtime-frames)");
}

TEST_CASE("Python splice: each activation's frames go where its shim lies on the C stack") {
  // Native, leaf first: 0 leaf (sp 0x100), 1 eval (sp 0x200), 2 C call
  // (0x300), 3 eval (0x400), 4 main (0x500). Shims at 0x250 (in frame 1)
  // and 0x450 (in frame 3).
  Walk w;
  for (const py_frame& f : {Frame(1), Frame(2), Shim(0x250), Frame(3), Shim(0x450)}) {
    Result<Walk> one = ParseWalk(WalkBytes(1, 1, 0, {f}));
    w.frames.push_back(one->frames[0]);
  }
  std::vector<uint64_t> sps = {0x100, 0x200, 0x300, 0x400, 0x500};
  // Tags do not matter with shims: the eval loop may be split or renamed.
  CHECK(Spliced(&w, {0, 1, 2, 3, 4}, {0, 0, 0, 0, 0}, sps) ==
        std::vector<capture::FrameId>{0, 1001, 1002, 1, 2, 1003, 3, 4});
  // A shim no native frame holds (the unwinder stopped short): the frames
  // follow the native ones, after a marker for the gap.
  std::string reason;
  CHECK(Spliced(&w, {0, 1, 2}, {0, 0, 0}, {0x100, 0x200, 0x300}, &reason) ==
        std::vector<capture::FrameId>{0, 1001, 1002, 1, 2, 9999, 1003});
  CHECK(reason == "1 of 2 Python activations not found in the native stack");
}

TEST_CASE("Python splice: 3.11 entry frames, by the eval loop's tagged frames") {
  Walk w;
  WalkFrame f1{.code = 1}, f2{.code = 2, .entry = true}, f3{.code = 3, .entry = true};
  w.frames = {f1, f2, f3};
  CHECK(Spliced(&w, {0, 1, 2, 3}, {0, 1, 0, 1}, {}) ==
        std::vector<capture::FrameId>{0, 1001, 1002, 1, 2, 1003, 3});
  // More entry frames than activations: the rest follow the gap's marker.
  std::string reason;
  CHECK(Spliced(&w, {0, 1, 2}, {0, 1, 0}, {}, &reason) ==
        std::vector<capture::FrameId>{0, 1001, 1002, 1, 2, 9999, 1003});
  CHECK(reason.find("1 of 2") == 0);
  // A walk cut short keeps what it has and says why.
  w.status = MICROSCOPE_PY_TRUNCATED;
  w.bound = 2;
  w.frames = {f1, f2};
  CHECK(Spliced(&w, {0, 1, 2}, {0, 1, 0}, {}, &reason) ==
        std::vector<capture::FrameId>{0, 1001, 1002, 1, 2, 9999});
  CHECK(reason == "cut at 2 Python frames (record --runtime-frames)");
}

TEST_CASE("Python splice: no frames, no walk, and a thread that runs no Python") {
  std::string reason;
  // No walk at an eval frame: a marker there, with the reason given.
  CHECK(Spliced(nullptr, {0, 1, 2}, {0, 1, 0}, {}, &reason) ==
        std::vector<capture::FrameId>{0, 9999, 1, 2});
  CHECK(reason == "no walk");
  // No walk and no eval frame known: the marker ends the stack.
  CHECK(Spliced(nullptr, {0, 1}, {0, 2}, {}) == std::vector<capture::FrameId>{0, 1, 9999});
  // A native worker thread: no thread state, no eval loop: untouched.
  Walk none;
  none.status = MICROSCOPE_PY_NO_THREAD;
  CHECK(Spliced(&none, {0, 1}, {0, 2}, {}) == std::vector<capture::FrameId>{0, 1});
  // The same with the eval loop on its stack is a contradiction worth a marker.
  CHECK(Spliced(&none, {0, 1}, {1, 0}, {}, &reason) == std::vector<capture::FrameId>{9999, 0, 1});
  CHECK(reason.find("no Python thread state") == 0);
}

namespace {

std::vector<uint8_t> RawRecord(uint32_t pid, uint32_t tid, uint64_t time, uint64_t id,
                               const std::vector<uint8_t>& data) {
  RecordBuilder b(record::kRecordSample);
  b.Put(id).Put(pid).Put(tid).Put(time).Put<uint32_t>(0).Put<uint32_t>(0);
  b.Put(uint32_t(data.size()));
  for (uint8_t byte : data) b.Put(byte);
  std::vector<uint8_t> r = b.Finish();
  while (r.size() % 8 != 0) r.push_back(0);
  uint16_t size = uint16_t(r.size());
  std::memcpy(r.data() + 6, &size, 2);
  return r;
}

// Records each stack's walk, in sample order.
class WalkRecorder final : public record::StackSplicer {
 public:
  void OnModuleMapped(const record::MappedModule& m, record::CodeMarks* marks) override {
    marks->Mark(m.module, 0, 0x1000, 1);
  }
  void Splice(const record::SpliceStack& s, record::FrameInterner*) override {
    Result<Walk> w = ParseWalk(s.walk);
    walks.push_back(w.ok() ? int(w->tid) * 100 + int(w->frames.size()) : -1);
  }
  bool OwnsWalk(std::span<const uint8_t> walk) const override { return IsPythonWalk(walk); }
  std::vector<int> walks;
};

}  // namespace

TEST_CASE("Ring pairing: a walk goes with the next sample of its thread in its ring") {
  record::SampleLayout layout = testing::CollectorLayout();
  layout.raw_ids = {42};
  // A raw sample decodes as kRaw by its id.
  auto raw = RawRecord(10, 11, 5, 42, WalkBytes(10, 11, 0, {Frame(1)}));
  Result<record::Event> e = record::DecodeRecord(raw, layout);
  REQUIRE(e.ok());
  CHECK(e->type == record::EventType::kRaw);
  CHECK(e->raw.size() >= MICROSCOPE_WALK_FIXED + sizeof(py_frame));
  auto cut = raw;
  uint32_t lie = 4096;
  std::memcpy(cut.data() + 8 + 32, &lie, 4);
  CHECK_FALSE(record::DecodeRecord(cut, layout).ok());

  WalkRecorder splicer;
  record::Processor p(record::Processor::Options{});
  p.AddMapping(10, 0x400000, 0x401000, 0, "/bin/python", {}, 1);
  p.AddSplicer(&splicer);
  std::vector<uint8_t> ring0, ring1;
  auto put = [](std::vector<uint8_t>* r, const std::vector<uint8_t>& rec) {
    r->insert(r->end(), rec.begin(), rec.end());
  };
  // Ring 0: walk(11) stamped after its sample (kernels may stamp either
  // first), then the sample; a walk whose sample was lost (another thread's
  // sample follows); a sample with no walk.
  put(&ring0, RawRecord(10, 11, 9, 42, WalkBytes(10, 11, 0, {Frame(1)})));
  put(&ring0, testing::SampleRecord(10, 11, 8, {record::kContextUser, 0x400100}));
  put(&ring0, RawRecord(10, 11, 10, 42, WalkBytes(10, 11, 0, {Frame(1), Frame(2)})));
  put(&ring0, testing::SampleRecord(10, 12, 11, {record::kContextUser, 0x400100}));
  // Ring 1: a walk of thread 12 for its sample there.
  put(&ring1, RawRecord(10, 12, 3, 42, WalkBytes(10, 12, 0, {Frame(1), Frame(2), Frame(3)})));
  put(&ring1, testing::SampleRecord(10, 12, 4, {record::kContextUser, 0x400100}));
  std::vector<record::RingArena> arenas = testing::Rings({ring0, ring1});
  record::PumpArenas(&arenas, layout, UINT64_MAX, &p);
  // Time order: ring 1's sample (4), then ring 0's two (8, 11).
  CHECK(splicer.walks == std::vector<int>{1203, 1101, -1});
  capture::Capture c = p.Finish(100);
  bool counted = false;
  for (const auto& problem : c.problems) {
    if (c.strings[problem.kind] == "runtime walks whose sample was lost")
      counted = problem.count == 1;
  }
  CHECK(counted);
}

TEST_CASE("Python walk: random bytes and flips never crash the reader or the splice") {
  std::mt19937_64 next(0x9e3779b97f4a7c15ull);
  auto good = WalkBytes(1, 1, 0, {Frame(1), Frame(2, MICROSCOPE_PY_ENTRY), Shim(0x250), Frame(3)});
  size_t parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::vector<uint8_t> bytes = good;
    if (round % 2 == 0) {
      for (int flips = 1 + int(next() % 8); flips > 0; --flips)
        bytes[next() % bytes.size()] ^= uint8_t(1 + next() % 255);
    } else {
      bytes.resize(next() % (good.size() + 64));
      for (uint8_t& b : bytes) b = uint8_t(next());
      if (bytes.size() >= 4) std::memcpy(bytes.data(), &good[0], 4);  // past the magic
    }
    Result<Walk> w = ParseWalk(bytes);
    if (!w.ok()) continue;
    ++parsed;
    REQUIRE(w->frames.size() <= MICROSCOPE_PY_MAX_FRAMES);
    auto spliced = Spliced(&*w, {0, 1, 2, 3}, {0, 1, 0, 1}, {0x100, 0x200, 0x300, 0x400});
    CHECK(spliced.size() >= 4);
  }
  CHECK(parsed > 1000);
}
