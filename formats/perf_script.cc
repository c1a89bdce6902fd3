#include "formats/perf_script.h"

#include <re2/re2.h>

#include <algorithm>
#include <string>
#include <vector>

#include "capture/reader.h"
#include "formats/capture_builder.h"

namespace microscope::formats {
namespace {

constexpr size_t kMaxLine = 1 << 20;

// COMM PID[/TID] [CPU] SECONDS.FRACTION: [PERIOD] EVENT: [IP SYM (DSO)]
const RE2& HeaderPattern() {
  static const RE2 re(
      R"(^\s*(\S.*?)\s+(\d+)(?:/(\d+))?\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d+):\s+(?:(\d+)\s+)?(\S+):(?:\s+(.*?))?\s*$)");
  return re;
}

// ADDRESS SYMBOL[+0xOFFSET] (DSO)
const RE2& FramePattern() {
  static const RE2 re(R"(^\s*([0-9a-fA-F]+)\s+(.*?)\s+\((.*)\)\s*$)");
  return re;
}

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    pos = eol + 1;
  }
  return lines;
}

}  // namespace

bool LooksLikePerfScript(std::string_view text) {
  for (std::string_view line : Lines(text.substr(0, std::min<size_t>(text.size(), 1 << 16)))) {
    if (line.empty() || line[0] == '#') continue;
    return line.size() < kMaxLine && RE2::FullMatch(line, HeaderPattern());
  }
  return false;
}

Result<capture::Capture> ReadPerfScript(std::string_view text) {
  CaptureBuilder b;
  std::vector<capture::FrameId> frames;
  bool in_sample = false, kernel_frames = false, periods = true, clock_event = true;
  capture::ThreadId thread = capture::kNone;
  uint64_t time = 0, weight = 1, first = 0, last = 0;
  std::string event;
  size_t line_no = 0;
  auto flush = [&]() -> Status {
    if (!in_sample) return OkStatus();
    in_sample = false;
    if (frames.size() > capture::kMaxStackDepth)
      return Status::Error(StatusCode::kDataLoss,
                           "line " + std::to_string(line_no) + ": a stack deeper than " +
                               std::to_string(capture::kMaxStackDepth) + " frames");
    b.Sample(time, thread, b.Stack(frames), weight, 1);
    return OkStatus();
  };
  auto frame = [&](std::string_view address, std::string sym, std::string dso) {
    uint64_t addr = 0;
    for (char ch : address.substr(0, 16))
      addr = addr * 16 + uint64_t(ch <= '9' ? ch - '0' : (ch | 0x20) - 'a' + 10);
    // "func+0x1c": the offset is where in it, not its name.
    if (size_t plus = sym.rfind("+0x"); plus != std::string::npos && plus > 0) sym.resize(plus);
    // The kernel and its modules ("[nf_tables]") by address.
    const bool kernel = dso.starts_with("[kernel.") || addr >= 0xffff800000000000ull;
    kernel_frames |= kernel;
    // An inlined call (--inline) is in the code of the frame printed next.
    if (dso == "inlined") dso = "";
    capture::ModuleId module = b.Module(dso, {});
    frames.push_back(b.Frame(kernel ? capture::FrameKind::kKernel : capture::FrameKind::kNative,
                             module, addr, b.Function(sym, module)));
  };
  for (std::string_view line : Lines(text)) {
    ++line_no;
    auto where = [&](const std::string& what) {
      return Status::Error(StatusCode::kDataLoss, "line " + std::to_string(line_no) + ": " + what);
    };
    if (line.size() > kMaxLine) return where("longer than 1 MiB: not perf script output");
    if (line.empty()) {
      RETURN_IF_ERROR(flush());
      continue;
    }
    if (line[0] == '#' && !in_sample) continue;
    std::string address, sym, dso;
    // Frames are indented by a tab; headers by spaces at most (perf pads the
    // command to 16 columns when it prints no callchain).
    if (line[0] == '\t') {
      if (!in_sample) return where("a frame line outside a sample (no header line before it)");
      if (!RE2::FullMatch(line, FramePattern(), &address, &sym, &dso))
        return where("not a frame line ('ADDRESS SYMBOL (DSO)')");
      frame(address, sym, dso);
      continue;
    }
    RETURN_IF_ERROR(flush());
    std::string comm, pid, tid, cpu, secs, fraction, period, rest;
    if (!RE2::FullMatch(line, HeaderPattern(), &comm, &pid, &tid, &cpu, &secs, &fraction, &period,
                        &event, &rest))
      return where("not a perf script sample header ('COMM PID/TID [CPU] TIME: PERIOD EVENT:')");
    if (pid.size() > 9 || tid.size() > 9 || secs.size() > 9 || fraction.size() > 9)
      return where("a pid, tid or time out of range");
    const int32_t p = std::stoi(pid), t = tid.empty() ? p : std::stoi(tid);
    thread = b.Thread(p, t, comm);
    uint64_t frac = std::stoull(fraction);
    for (size_t d = fraction.size(); d < 9; ++d) frac *= 10;
    time = std::stoull(secs) * 1000000000ull + frac;
    if (first == 0 || time < first) first = time;
    last = std::max(last, time);
    periods &= !period.empty();
    weight = period.empty() || period.size() > 18 ? 1 : std::max<uint64_t>(1, std::stoull(period));
    std::string base = event.substr(0, event.find(':'));
    clock_event &= base == "cpu-clock" || base == "task-clock";
    frames.clear();
    in_sample = true;
    if (!rest.empty() && RE2::FullMatch(rest, FramePattern(), &address, &sym, &dso))
      frame(address, sym, dso);
  }
  RETURN_IF_ERROR(flush());
  capture::Capture& c = b.capture();
  if (c.samples.size() == 0) return Status::Error(StatusCode::kDataLoss, "no samples");
  c.settings.mode = "import";
  c.settings.recorder = "microscope convert (perf script text)";
  c.settings.kernel_frames = kernel_frames;
  c.settings.start_time = first;
  c.settings.end_time = last;
  if (periods && clock_event) {
    c.settings.metric = "cpu";
    c.settings.unit = "nanoseconds";
  } else if (periods) {
    // Another event's periods: its count of events.
    c.settings.metric = event.substr(0, event.find(':'));
    c.settings.unit = "events";
  } else {
    // No period printed: each sample counts one.
    c.settings.metric = "samples";
    c.settings.unit = "count";
    for (size_t i = 0; i < c.samples.size(); ++i) c.samples.weight[i] = 1;
  }
  c.settings.notes.push_back(
      "perf script text: frames by symbol and DSO as printed (virtual addresses, no build IDs: "
      "not symbolized again); the event " +
      event + "; a thread printed without its pid is a process of its own");
  RETURN_IF_ERROR(capture::ValidateCapture(c));
  return std::move(c);
}

}  // namespace microscope::formats
