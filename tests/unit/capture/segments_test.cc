#include <doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "capture/compact.h"
#include "capture/segments.h"
#include "capture/window.h"
#include "capture/writer.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;
using namespace microscope::capture;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag = "a")
      : path(fs::temp_directory_path() / ("segments." + tag + "." + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void Touch(const fs::path& p, size_t bytes) {
  std::ofstream(p) << std::string(bytes, 'x');
}

void SetAge(const fs::path& p, int seconds_ago) {
  fs::last_write_time(p, fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
}

uint64_t NowRealtime() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

}  // namespace

TEST_CASE("Segments: names carry UTC start, pid and sequence, and nothing else is one") {
  // 2026-12-02 06:30:15.123 UTC
  const std::string name = SegmentName(1796193015'123'000'000ull, 4242, 7);
  CHECK(name == "microscope-20261202T063015.123Z-4242-7.mscap");
  CHECK(IsSegmentName(name));
  CHECK_FALSE(IsSegmentName(name + ".tmp.ab12cd"));
  CHECK_FALSE(IsSegmentName("microscope.mscap"));
  CHECK_FALSE(IsSegmentName("microscope-20261202T063015.123Z-4242.mscap"));
  CHECK_FALSE(IsSegmentName("microscope-2026120xT063015.123Z-4242-7.mscap"));
  CHECK_FALSE(IsSegmentName("notes-20261202T063015.123Z-4242-7.mscap"));
}

TEST_CASE("Segments: retention deletes the oldest segments by age and size, nothing else") {
  TempDir dir;
  const char* names[] = {
      "microscope-20261202T060000.000Z-10-1.mscap", "microscope-20261202T060010.000Z-10-2.mscap",
      "microscope-20261202T060020.000Z-10-3.mscap", "microscope-20261202T060030.000Z-10-4.mscap"};
  int age = 400;
  for (const char* n : names) {
    Touch(dir.path / n, 1000);
    SetAge(dir.path / n, age);
    age -= 100;
  }
  Touch(dir.path / "other.mscap", 5000);
  SetAge(dir.path / "other.mscap", 9999);
  Touch(dir.path / "microscope-notes.txt", 10);
  auto listed = ListSegments(dir.path.string());
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 4);
  CHECK(listed->front().name == names[0]);
  // Ages 400, 300, 200, 100 s: a 250 s retention deletes the first two.
  auto deleted = ApplyRetention(dir.path.string(), 250'000'000'000ull, 0, NowRealtime());
  CHECK(deleted == std::vector<std::string>{names[0], names[1]});
  // 2000 bytes left: a limit of 1500 deletes one more.
  deleted = ApplyRetention(dir.path.string(), 0, 1500, NowRealtime());
  CHECK(deleted == std::vector<std::string>{names[2]});
  CHECK(fs::exists(dir.path / names[3]));
  // The newest stays, even past both limits.
  CHECK(ApplyRetention(dir.path.string(), 1, 1, NowRealtime()).empty());
  CHECK(fs::exists(dir.path / names[3]));
  CHECK(fs::exists(dir.path / "other.mscap"));
  CHECK(fs::exists(dir.path / "microscope-notes.txt"));
}

TEST_CASE("Segments: a killed writer's temporaries go, a live one's stay") {
  TempDir dir;
  const std::string dead = SegmentName(NowRealtime(), 999999999, 1) + ".tmp.AbCdEf";
  const std::string live = SegmentName(NowRealtime(), getpid(), 1) + ".tmp.GhIjKl";
  Touch(dir.path / dead, 10);
  Touch(dir.path / live, 10);
  Touch(dir.path / "unrelated.tmp.XXXXXX", 10);
  CHECK(RemoveStaleTemporaries(dir.path.string()) == 1);
  CHECK_FALSE(fs::exists(dir.path / dead));
  CHECK(fs::exists(dir.path / live));
  CHECK(fs::exists(dir.path / "unrelated.tmp.XXXXXX"));
}

TEST_CASE("Segments: a directory reads as one capture, past unreadable files and other boots") {
  TempDir dir;
  const Capture whole = testing::MakeProbeCapture();
  Capture live = whole;
  uint64_t from = 10;
  int sequence = 0;
  for (uint64_t cut : {104, 180, 1001}) {
    Capture part;
    TimeCut t;
    t.before = cut;
    t.short_counts = cut == 1001;
    TakeEventRows(&live, t, &part);
    Capture p = whole;
    p.samples = std::move(part.samples);
    p.off_cpu = std::move(part.off_cpu);
    p.off_cpu_short = std::move(part.off_cpu_short);
    p.probe_records = std::move(part.probe_records);
    p.labels = std::move(part.labels);
    p.syscalls = std::move(part.syscalls);
    p.settings.start_time = from;
    p.settings.end_time = std::min<uint64_t>(cut, 1000);
    p.settings.boot_id = "boot-b";
    CompactDictionaries(&p);
    NormalizeEventRows(&p);
    REQUIRE(
        WriteCapture(
            p, (dir.path / SegmentName(1796193015'000'000'000ull + from, 7, ++sequence)).string())
            .ok());
    from = cut;
  }
  // An earlier boot's segment, a corrupt one, a temporary: none is read.
  Capture old = whole;
  old.settings.boot_id = "boot-a";
  REQUIRE(
      WriteCapture(old, (dir.path / SegmentName(1796190000'000'000'000ull, 5, 1)).string()).ok());
  Touch(dir.path / SegmentName(1796193016'000'000'000ull, 7, 9), 100);
  Touch(dir.path / (SegmentName(1796193017'000'000'000ull, 7, 10) + ".tmp.ZZZZZZ"), 100);
  auto read = ReadSegmentDirectory(dir.path.string());
  REQUIRE(read.ok());
  CHECK(read->segments == 3);
  CHECK(read->capture.samples.size() == whole.samples.size());
  CHECK(read->capture.probe_records.size() == whole.probe_records.size());
  CHECK(read->capture.off_cpu.size() == whole.off_cpu.size());
  REQUIRE(read->notes.size() == 2);
  CHECK(read->notes[0].find("left out") != std::string::npos);
  CHECK(read->notes[1] == "1 segment of an earlier boot left out (the clock restarted at boot)");
  CHECK(read->capture.settings.part == "segments");
  // Nothing to read is an error naming the directory.
  TempDir empty("empty");
  auto none = ReadSegmentDirectory(empty.path.string());
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("no segments") != std::string::npos);
}

TEST_CASE("Segments: a segment missing between two of one recording is a gap, none otherwise") {
  TempDir dir("gap");
  const Capture whole = testing::MakeProbeCapture();
  std::vector<fs::path> paths;
  for (uint64_t i = 1; i <= 3; ++i) {
    Capture p = whole;
    p.settings.start_time = 100 * i;
    p.settings.end_time = 100 * i + 90;  // 10 ns between one's end and the next's start
    p.settings.recording_id = "rec";
    p.settings.part = "segment";
    p.settings.part_index = i;
    paths.push_back(dir.path / SegmentName(1796193015'000'000'000ull + i, 7, int(i)));
    REQUIRE(WriteCapture(p, paths.back().string()).ok());
  }
  auto all = ReadSegmentDirectory(dir.path.string());
  REQUIRE(all.ok());
  CHECK(all->capture.gaps.empty());
  fs::remove(paths[1]);
  auto read = ReadSegmentDirectory(dir.path.string());
  REQUIRE(read.ok());
  REQUIRE(read->capture.gaps.size() == 1);
  const Gap& g = read->capture.gaps[0];
  CHECK(g.cause == GapCause::kSegmentMissing);
  CHECK(g.begin == 190);
  CHECK(g.end == 300);
  CHECK(g.count == 1);
  CHECK(g.pid == 0);
}
