#include <doctest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "analysis/profile.h"
#include "capture/reader.h"
#include "formats/chrome.h"
#include "formats/convert.h"
#include "formats/folded.h"
#include "formats/gzip.h"
#include "formats/pprof.h"
#include "formats/speedscope.h"
#include "tests/unit/analysis/test_views.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::analysis;

namespace {

// name -> (self samples, total samples, self value)
std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> FlatByName(
    const capture::Capture& c) {
  FunctionKeys keys(c);
  std::map<std::string, std::tuple<uint64_t, uint64_t, uint64_t>> out;
  for (const auto& r : ComputeFlat(c, keys).rows) {
    out[keys.Name(r.key)] = {r.self.samples, r.total.samples, r.self.value};
  }
  return out;
}

using testing::ToString;

}  // namespace

TEST_CASE("Folded: writes callers first with counts, and reads back the same flat profile") {
  auto c = testing::MakeTestCapture();
  FunctionKeys keys(c);
  std::string text = formats::WriteFolded(c, keys, {}, false);
  CHECK(text == "main;run;cold 3\nmain;run;hot 7\n");
  CHECK(formats::WriteFolded(c, keys, {}, true) ==
        "app-100;main;run;cold 3\napp-100;main;run;hot 7\n");
  auto back = formats::ReadFolded(text);
  REQUIRE(back.ok());
  auto a = FlatByName(c), b = FlatByName(*back);
  for (const auto& [name, v] : b) {
    CHECK(std::get<0>(a[name]) == std::get<0>(v));
    CHECK(std::get<1>(a[name]) == std::get<1>(v));
  }
  CHECK(back->settings.unit == "count");
}

TEST_CASE("Folded: malformed lines name the line") {
  auto bad = formats::ReadFolded("a;b 3\n\na;c\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "line 3: no sample count at the end (want 'a;b;c COUNT')");
  auto bad2 = formats::ReadFolded("a;;b 2\n");
  REQUIRE_FALSE(bad2.ok());
  CHECK(bad2.status().message().find("line 1: empty frame name") == 0);
  auto bad3 = formats::ReadFolded("a;b x2\n");
  REQUIRE_FALSE(bad3.ok());
  CHECK(bad3.status().message().find("line 1: count 'x2'") == 0);
}

TEST_CASE("Folded: a line over 1 MiB is refused with its number, nothing kept of it") {
  std::string text = "a;b 1\n" + std::string(2 << 20, 'x') + " 1\n";
  auto bad = formats::ReadFolded(text);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "line 2: longer than 1 MiB (2097154 bytes): not a folded stack");
}

TEST_CASE("gzip: bytes after the member are refused, and the ceiling does not grow with them") {
  std::vector<uint8_t> data(1000, 'a');
  std::vector<uint8_t> gz = formats::Gzip(data);
  REQUIRE(formats::Gunzip(gz, 1 << 20).ok());
  std::vector<uint8_t> padded = gz;
  padded.resize(gz.size() + 4096, 0);
  auto bad = formats::Gunzip(padded, 1 << 20);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() ==
        "4096 bytes after the gzip member's end at byte " + std::to_string(gz.size()));
  // A bomb inflates past the fixed ceiling however much padding follows.
  std::vector<uint8_t> bomb =
      formats::Gzip(std::vector<uint8_t>(formats::kMaxInflatedPprof + 1, 0));
  bomb.resize(bomb.size() * 64, 0);
  auto r = formats::ReadPprof(bomb);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("inflates past 268435456 bytes") != std::string::npos);
}

TEST_CASE("pprof: write then read gives the same flat profile, threads and values") {
  auto c = testing::MakeTestCapture();
  auto bytes = formats::WritePprof(c, {});
  CHECK(formats::IsGzip(bytes));
  auto back = formats::ReadPprof(bytes);
  REQUIRE(back.ok());
  CHECK(FlatByName(c) == FlatByName(*back));
  CHECK(back->settings.metric == "cpu");
  CHECK(back->settings.unit == "nanoseconds");
  REQUIRE(back->threads.size() == 1);
  CHECK(back->threads[0].tid == 100);
  CHECK(back->str(back->threads[0].name) == "app");
  // Frames keep their module, build ID and file offset.
  bool found = false;
  for (const auto& f : back->frames) {
    if (f.function != capture::kNone && back->str(back->functions[f.function].name) == "hot") {
      found = true;
      CHECK(f.address == 0x30);
      CHECK(back->modules[f.module].build_id == std::vector<uint8_t>{0xab, 0xcd});
    }
  }
  CHECK(found);
}

TEST_CASE("pprof: corrupt input is an error naming where, never a crash") {
  auto c = testing::MakeTestCapture();
  auto gz = formats::WritePprof(c, {});
  auto raw = formats::Gunzip(gz, 1 << 20);
  REQUIRE(raw.ok());
  std::mt19937 rng(5);
  int errors = 0;
  for (int round = 0; round < 5000; ++round) {
    std::vector<uint8_t> bad = *raw;
    for (int i = 0; i < 3; ++i) bad[rng() % bad.size()] ^= uint8_t(1 + rng() % 255);
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    auto r = formats::ReadPprof(bad);
    if (!r.ok()) ++errors;
  }
  CHECK(errors > 0);
  std::vector<uint8_t> truncated(gz.begin(), gz.begin() + gz.size() / 2);
  auto r = formats::ReadPprof(truncated);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find("gzip data is truncated") == 0);
}

TEST_CASE("pprof: unnamed frames are a function per address, and read back unnamed") {
  auto c = testing::MakeTestCapture();
  // main > run > app+0x50 (stack 4) and main > run > app+0x60: pprof -top
  // drops addresses, so one function for both would merge them in one row.
  c.frames.push_back({capture::FrameKind::kNative, 0, 0x60, capture::kNone});
  c.stacks.parent.push_back(1);
  c.stacks.frame.push_back(capture::FrameId(c.frames.size() - 1));
  for (size_t i = 0; i < 3; ++i) c.samples.stack[i] = 4;
  for (size_t i = 3; i < 5; ++i) c.samples.stack[i] = capture::StackId(c.stacks.size() - 1);
  REQUIRE(capture::ValidateCapture(c).ok());
  std::vector<uint8_t> pb = formats::WritePprof(c, {});
  auto raw = formats::Gunzip(pb, size_t(1) << 26);
  REQUIRE(raw.ok());
  std::string text(raw->begin(), raw->end());
  CHECK(text.find("app+0x50") != std::string::npos);
  CHECK(text.find("app+0x60") != std::string::npos);
  auto back = formats::ReadPprof(pb);
  REQUIRE(back.ok());
  CHECK(FlatByName(c) == FlatByName(*back));
  CHECK(std::get<0>(FlatByName(*back).at("app+0x60")) == 2);
  size_t unnamed = 0;
  for (const auto& f : back->frames) {
    if (f.function != capture::kNone) continue;
    ++unnamed;
    CHECK(f.kind == capture::FrameKind::kNative);
    CHECK((f.address == 0x50 || f.address == 0x60));
    CHECK(back->modules[f.module].build_id == std::vector<uint8_t>{0xab, 0xcd});
  }
  CHECK(unnamed == 2);
  CHECK(back->functions.size() == 4);  // main, run, hot, cold: none for the addresses
}

TEST_CASE("Chrome trace: valid JSON, named tracks, nested slices, frames that resolve") {
  auto c = testing::MakeTestCapture();
  FunctionKeys keys(c);
  auto j =
      nlohmann::json::parse(ToString([&](FILE* f) { formats::WriteChromeTrace(f, c, keys, {}); }));
  std::set<std::string> names;
  for (const auto& e : j["traceEvents"]) {
    CHECK(e.contains("pid"));
    CHECK(e.contains("tid"));
    std::string ph = e["ph"];
    CHECK((ph == "M" || ph == "X"));
    if (ph == "X") {
      CHECK(e["dur"].get<double>() >= 0);
      names.insert(e["name"]);
    }
  }
  CHECK(names == std::set<std::string>{"main", "run", "hot", "cold"});
  for (const auto& s : j["samples"]) {
    REQUIRE(j["stackFrames"].contains(s["sf"].get<std::string>()));
  }
  for (const auto& [id, frame] : j["stackFrames"].items()) {
    if (frame.contains("parent"))
      CHECK(j["stackFrames"].contains(frame["parent"].get<std::string>()));
  }
}

TEST_CASE("speedscope: sampled profiles with resolvable frames and weights") {
  auto c = testing::MakeTestCapture();
  FunctionKeys keys(c);
  auto j =
      nlohmann::json::parse(ToString([&](FILE* f) { formats::WriteSpeedscope(f, c, keys, {}); }));
  REQUIRE(j["profiles"].size() == 1);
  const auto& p = j["profiles"][0];
  CHECK(p["type"] == "sampled");
  CHECK(p["samples"].size() == p["weights"].size());
  uint64_t total = 0;
  for (const auto& w : p["weights"]) total += w.get<uint64_t>();
  CHECK(total == p["endValue"].get<uint64_t>());
  for (const auto& s : p["samples"]) {
    for (const auto& f : s) CHECK(f.get<size_t>() < j["shared"]["frames"].size());
  }
}

TEST_CASE("pprof: a native frame and two inline levels at one address are one location") {
  auto c = testing::MakeTestCapture();
  // hot (frame 2, at 0x30) gets two inlined functions: inner and outer.
  c.strings.push_back("inner");
  c.strings.push_back("outer");
  c.functions.push_back({capture::StringId(c.strings.size() - 2), 0});
  c.functions.push_back({capture::StringId(c.strings.size() - 1), 0});
  c.frames.push_back(
      {capture::FrameKind::kInline, 0, 0x30, capture::FunctionId(c.functions.size() - 1)});
  c.frames.push_back(
      {capture::FrameKind::kInline, 0, 0x30, capture::FunctionId(c.functions.size() - 2)});
  // main > run > hot > outer > inner
  c.stacks.parent.push_back(2);
  c.stacks.frame.push_back(capture::FrameId(c.frames.size() - 2));
  c.stacks.parent.push_back(capture::StackId(c.stacks.size() - 1));
  c.stacks.frame.push_back(capture::FrameId(c.frames.size() - 1));
  for (size_t i = 0; i < 7; ++i) c.samples.stack[i] = capture::StackId(c.stacks.size() - 1);
  REQUIRE(capture::ValidateCapture(c).ok());
  auto back = formats::ReadPprof(formats::WritePprof(c, {}));
  REQUIRE(back.ok());
  // The inline frames come back as inline frames of hot's module and address.
  size_t inline_frames = 0;
  for (const auto& f : back->frames) {
    if (f.kind == capture::FrameKind::kInline) {
      ++inline_frames;
      CHECK(f.address == 0x30);
      CHECK(f.module != capture::kNone);
    }
  }
  CHECK(inline_frames == 2);
  CHECK(FlatByName(c) == FlatByName(*back));
}

TEST_CASE("Writers: invalid UTF-8 in names is replaced, never a crash") {
  auto c = testing::MakeTestCapture();
  c.strings[c.threads[0].name] = std::string("worker\xe3\x83", 8);  // cut mid-character
  c.strings[c.functions[2].name] = "hot\xff";
  FunctionKeys keys(c);
  auto chrome = ToString([&](FILE* f) { formats::WriteChromeTrace(f, c, keys, {}); });
  CHECK(nlohmann::json::parse(chrome).is_object());
  auto ss = ToString([&](FILE* f) { formats::WriteSpeedscope(f, c, keys, {}); });
  CHECK(nlohmann::json::parse(ss).is_object());
}

TEST_CASE("Folded: a file that starts with blank lines reads") {
  auto r = formats::ReadFolded("\n\na;b 2\n");
  REQUIRE(r.ok());
  CHECK(r->samples.size() == 1);
}

TEST_CASE("Folded: random text never crashes the reader, and what it accepts validates") {
  std::mt19937 rng(21);
  const std::string alphabet = "ab;; \n\n0123456789x\t\r;";
  int accepted = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    size_t n = rng() % 200;
    for (size_t i = 0; i < n; ++i) text.push_back(alphabet[rng() % alphabet.size()]);
    auto r = formats::ReadFolded(text);
    if (r.ok()) {
      ++accepted;
      CHECK(capture::ValidateCapture(*r).ok());
    } else {
      CHECK(r.status().message().rfind("line ", 0) == 0);  // every error names its line
    }
  }
  CHECK(accepted > 0);
}

TEST_CASE("pprof: interpreted frames are functions with file, line and start line, no address") {
  auto c = testing::MakeTestCapture();
  // hot (frame 2) runs a Python function: main > run > hot > handle (app.py:12, from line 10).
  c.strings.push_back("handle");
  c.strings.push_back("app.py");
  c.functions.push_back({capture::StringId(c.strings.size() - 2), capture::kNone});
  c.frames.push_back({capture::FrameKind::kInterpreted, capture::kNone, 10,
                      capture::FunctionId(c.functions.size() - 1),
                      capture::StringId(c.strings.size() - 1), 12});
  c.stacks.parent.push_back(2);
  c.stacks.frame.push_back(capture::FrameId(c.frames.size() - 1));
  for (size_t i = 0; i < 7; ++i) c.samples.stack[i] = capture::StackId(c.stacks.size() - 1);
  REQUIRE(capture::ValidateCapture(c).ok());
  std::vector<uint8_t> pb = formats::WritePprof(c, {});
  auto back = formats::ReadPprof(pb);
  REQUIRE(back.ok());
  CHECK(FlatByName(c) == FlatByName(*back));
  CHECK(std::get<0>(FlatByName(*back).at("handle")) == 7);
  bool found = false;
  for (const auto& f : back->frames) {
    if (f.function == capture::kNone || back->str(back->functions[f.function].name) != "handle")
      continue;
    found = true;
    CHECK(back->str(f.file) == "app.py");
    CHECK(f.line == 12);
    CHECK(f.module == capture::kNone);  // no mapping, no address
  }
  CHECK(found);
  // The function's start line (field 5) is written: 0x28 0x0a in the gzip'd
  // payload's Function message.
  auto raw = formats::Gunzip(pb, size_t(1) << 26);
  REQUIRE(raw.ok());
  const std::vector<uint8_t> start_line = {0x28, 0x0a};
  CHECK(std::search(raw->begin(), raw->end(), start_line.begin(), start_line.end()) != raw->end());
}

TEST_CASE("ExportToMemory: what the streamed writers write, and never more than its limit") {
  const capture::Capture c = testing::MakeTestCapture();
  const analysis::FunctionKeys keys(c);
  const std::string chrome =
      testing::ToString([&](FILE* f) { formats::WriteChromeTrace(f, c, keys, {}); });
  Result<std::string> whole = formats::ExportToMemory(c, "chrome", {}, 1 << 20);
  REQUIRE(whole.ok());
  CHECK(*whole == chrome);
  Result<std::string> cut = formats::ExportToMemory(c, "chrome", {}, chrome.size() - 1);
  REQUIRE(!cut.ok());
  CHECK(cut.status().code() == StatusCode::kTooLarge);
  CHECK(formats::ExportToMemory(c, "chrome", {}, chrome.size()).ok());
  // The aggregated ones are bounded too, and an unknown format is refused.
  CHECK(formats::ExportToMemory(c, "folded", {}, 4).status().code() == StatusCode::kTooLarge);
  CHECK(!formats::ExportToMemory(c, "svg", {}, 1 << 20).ok());
}
