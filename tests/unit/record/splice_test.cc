#include <doctest.h>

#include <string>
#include <vector>

#include "analysis/keys.h"
#include "capture/reader.h"
#include "capture/writer.h"
#include "src/record/pump.h"
#include "tests/unit/record/record_builder.h"

using namespace microscope;
using namespace microscope::record;
using namespace microscope::testing;
using capture::kNone;

namespace {

// A runtime stand-in: marks [0x100, 0x200) of /bin/interp as its eval loop
// and puts two interpreted frames (callee first) in place of each frame
// there.
class TwoFrameSplicer final : public StackSplicer {
 public:
  void OnModuleMapped(const MappedModule& m, CodeMarks* marks) override {
    mapped.push_back(std::string(m.path) + (m.first ? " first" : " again") + " pid " +
                     std::to_string(m.pid));
    if (m.path == "/bin/interp" && m.first) marks->Mark(m.module, 0x100, 0x200, 7);
  }
  void Splice(const SpliceStack& s, FrameInterner* interner) override {
    ++calls;
    std::vector<capture::FrameId> out;
    for (size_t i = 0; i < s.frames->size(); ++i) {
      if (s.tags[i] != 7) {
        out.push_back((*s.frames)[i]);
        continue;
      }
      out.push_back(interner->Interpreted({"handle", "app.py", 12, 10}));
      out.push_back(interner->Interpreted({"main", "app.py", 30, 28}));
    }
    *s.frames = out;
  }
  bool OwnsWalk(std::span<const uint8_t>) const override { return false; }
  std::vector<std::string> mapped;
  int calls = 0;
};

std::vector<std::string> Names(const capture::Capture& c, capture::StackId stack) {
  analysis::FunctionKeys keys(c);
  std::vector<std::string> names;
  for (uint32_t n = stack; n != kNone; n = c.stacks.parent[n]) {
    capture::FrameId f = c.stacks.frame[n];
    names.push_back(keys.Name(keys.KeyOf(f)) + " [" + keys.ModuleName(keys.KeyOf(f)) + "]");
  }
  return names;
}

TEST_CASE("Splicer: marked code is replaced by interpreted frames keyed by their text") {
  TwoFrameSplicer splicer;
  Processor p(Processor::Options{});
  // A mapping known before the splicer (an attach's seed) is announced too.
  p.AddMapping(10, 0x400000, 0x401000, 0, "/bin/interp", {}, 1);
  p.AddSplicer(&splicer);
  std::vector<uint8_t> arena;
  auto put = [&](const std::vector<uint8_t>& r) { arena.insert(arena.end(), r.begin(), r.end()); };
  put(Mmap2Record(10, 0x500000, 0x1000, 0, "/lib/other.so", 2));
  put(TaskRecord(kRecordFork, 11, 10, 11, 10, 3));  // the child inherits both mappings
  // Leaf in the eval loop, called from main's native code at 0x400010.
  put(SampleRecord(10, 10, 5, {record::kContextUser, 0x400150, 0x400011}));
  put(SampleRecord(10, 10, 6,
                   {record::kContextUser, 0x500010, 0x400011}));  // nothing marked: not spliced
  put(SampleRecord(11, 11, 7, {record::kContextUser, 0x400150, 0x400011}));
  ProcessArenas({arena}, CollectorLayout(), &p);
  capture::Capture c = p.Finish(100);
  REQUIRE(capture::ValidateCapture(c).ok());
  CHECK(splicer.calls == 2);
  CHECK(splicer.mapped ==
        std::vector<std::string>{"/bin/interp first pid 10", "/lib/other.so first pid 10",
                                 "/bin/interp again pid 11", "/lib/other.so again pid 11"});
  REQUIRE(c.samples.size() == 3);
  // Fixture frames are unnamed: interp+0x10 is the native caller (the
  // return address stepped back into the call).
  CHECK(Names(c, c.samples.stack[0]) ==
        std::vector<std::string>{"handle [app.py]", "main [app.py]", "interp+0x10 [interp]"});
  CHECK(Names(c, c.samples.stack[1]) ==
        std::vector<std::string>{"other.so+0x10 [other.so]", "interp+0x10 [interp]"});
  CHECK(c.samples.stack[2] == c.samples.stack[0]);  // the same text, the same frames and nodes
  // The frames: kind, function, file, line and first line.
  const capture::Frame& leaf = c.frames[c.stacks.frame[c.samples.stack[0]]];
  CHECK(leaf.kind == capture::FrameKind::kInterpreted);
  CHECK(leaf.module == kNone);
  CHECK(c.str(c.functions[leaf.function].name) == "handle");
  CHECK(c.str(leaf.file) == "app.py");
  CHECK(leaf.line == 12);
  CHECK(leaf.address == 10);

  // Written and read back as they were.
  const std::string path = "/tmp/microscope_splice_test.mscap";
  REQUIRE(capture::WriteCapture(c, path).ok());
  Result<capture::Capture> back = capture::ReadCapture(path);
  REQUIRE(back.ok());
  CHECK(Names(*back, back->samples.stack[0]) == Names(c, c.samples.stack[0]));
  std::remove(path.c_str());
}

TEST_CASE("Splicer: functions of the same name in other files or at other lines stay apart") {
  struct Splicer final : StackSplicer {
    void OnModuleMapped(const MappedModule& m, CodeMarks* marks) override {
      marks->Mark(m.module, 0, 0x1000, 1);
    }
    void Splice(const SpliceStack& s, FrameInterner* in) override {
      *s.frames = {in->Interpreted({"run", "a.py", 5, 1}), in->Interpreted({"run", "b.py", 5, 1}),
                   in->Interpreted({"run", "a.py", 50, 40}),
                   in->Interpreted({"run", "a.py", 6, 1})};
    }
    bool OwnsWalk(std::span<const uint8_t>) const override { return false; }
  } splicer;
  Processor p(Processor::Options{});
  p.AddSplicer(&splicer);
  p.AddMapping(10, 0x400000, 0x401000, 0, "/bin/interp", {}, 1);
  ProcessArenas({SampleRecord(10, 10, 5, {record::kContextUser, 0x400150})}, CollectorLayout(), &p);
  capture::Capture c = p.Finish(100);
  REQUIRE(capture::ValidateCapture(c).ok());
  std::vector<capture::FrameId> frames;
  for (uint32_t n = c.samples.stack[0]; n != kNone; n = c.stacks.parent[n])
    frames.push_back(c.stacks.frame[n]);
  REQUIRE(frames.size() == 4);
  // Three functions (a.py:1, b.py:1, a.py:40); the first and last frames share one.
  CHECK(c.frames[frames[0]].function == c.frames[frames[3]].function);
  CHECK(c.frames[frames[0]].function != c.frames[frames[1]].function);
  CHECK(c.frames[frames[0]].function != c.frames[frames[2]].function);
  analysis::FunctionKeys keys(c);
  CHECK(keys.KeyOf(frames[0]) != keys.KeyOf(frames[1]));
}

TEST_CASE("Reader: an interpreted frame must name its function and no module") {
  Processor p(Processor::Options{});
  capture::Capture c = p.Finish(1);
  c.strings.push_back("f");
  c.functions.push_back({0, kNone, kNone});
  c.frames.push_back({capture::FrameKind::kInterpreted, kNone, 1, 0, kNone, 3});
  CHECK(capture::ValidateCapture(c).ok());
  c.frames[0].function = kNone;
  CHECK_FALSE(capture::ValidateCapture(c).ok());
  c.frames[0].function = 0;
  c.modules.push_back({});
  c.modules[0].path = 0;
  c.frames[0].module = 0;
  CHECK_FALSE(capture::ValidateCapture(c).ok());
}

}  // namespace
