#include "formats/folded.h"

#include <algorithm>
#include <map>

#include "analysis/profile.h"
#include "capture/reader.h"
#include "formats/capture_builder.h"

namespace microscope::formats {

std::string WriteFolded(const capture::Capture& c, const analysis::FunctionKeys& keys,
                        const analysis::SampleFilter& filter, bool per_thread, FoldedValue value,
                        analysis::Cancel cancel) {
  const bool micros = value == FoldedValue::kMicroseconds;
  // Count per (thread or none, stack node), then name each stack once.
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> counts;
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (cancel.At(i)) return "";
    if (!filter.Keep(c, i) || c.samples.stack[i] == capture::kNone) continue;
    uint32_t thread = per_thread ? c.samples.thread[i] : capture::kNone;
    counts[{thread, c.samples.stack[i]}] += micros ? c.samples.weight[i] : c.samples.CountAt(i);
  }
  auto clean = [](std::string s) {
    std::replace(s.begin(), s.end(), ';', ':');
    std::replace(s.begin(), s.end(), '\n', ' ');
    return s;
  };
  // Each sampled stack's path is built by walking to its root: memory is
  // that of the output, not of every prefix of every stack.
  std::vector<std::string_view> names;
  auto name_of = [&](uint32_t node) {
    names.clear();
    for (uint32_t n = node; n != capture::kNone; n = c.stacks.parent[n]) {
      names.push_back(keys.Name(keys.KeyOf(c.stacks.frame[n])));
    }
    std::string path;
    for (size_t i = names.size(); i-- > 0;) {
      path += clean(std::string(names[i]));
      if (i > 0) path += ';';
    }
    return path;
  };
  std::map<std::string, uint64_t> lines;
  for (const auto& [key, count] : counts) {
    std::string line;
    if (key.first != capture::kNone) {
      const capture::Thread& t = c.threads[key.first];
      line = clean(c.str(t.name)) + "-" + std::to_string(t.tid) + ";";
    }
    line += name_of(key.second);
    lines[line] += count;
  }
  std::string out;
  for (const auto& [line, count] : lines) {
    uint64_t v = micros ? (count + 500) / 1000 : count;
    if (v > 0) out += line + " " + std::to_string(v) + "\n";
  }
  return out;
}

// A folded line is a stack of at most kMaxStackDepth names: a line longer
// than this is not one, and is refused before anything is kept of it.
constexpr size_t kMaxFoldedLine = 1 << 20;

Result<capture::Capture> ReadFolded(std::string_view text) {
  CaptureBuilder b;
  bool kernel_frames = false;
  capture::ThreadId thread = b.Thread(0, 0, "folded");
  size_t line_no = 0;
  size_t pos = 0;
  std::vector<capture::FrameId> frames;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    auto where = [&](const std::string& what) {
      return Status::Error(StatusCode::kDataLoss, "line " + std::to_string(line_no) + ": " + what);
    };
    if (line.size() > kMaxFoldedLine) {
      return where("longer than 1 MiB (" + std::to_string(line.size()) +
                   " bytes): not a folded stack");
    }
    size_t space = line.find_last_of(' ');
    if (space == std::string_view::npos || space + 1 == line.size()) {
      return where("no sample count at the end (want 'a;b;c COUNT')");
    }
    std::string_view count_text = line.substr(space + 1);
    uint64_t count = 0;
    for (char ch : count_text) {
      if (ch < '0' || ch > '9' || count > (UINT64_MAX - 9) / 10) {
        return where("count '" + std::string(count_text) + "' is not a whole number");
      }
      count = count * 10 + uint64_t(ch - '0');
    }
    if (count > UINT32_MAX) return where("count " + std::to_string(count) + " is too large");
    std::string_view stack = line.substr(0, space);
    while (!stack.empty() && stack.back() == ' ') stack.remove_suffix(1);
    if (stack.empty()) return where("empty stack");
    frames.clear();
    size_t start = 0;
    while (start <= stack.size()) {
      size_t semi = stack.find(';', start);
      if (semi == std::string_view::npos) semi = stack.size();
      std::string_view name = stack.substr(start, semi - start);
      if (name.empty()) return where("empty frame name at column " + std::to_string(start + 1));
      kernel_frames |= name.ends_with("_[k]");  // perf script's and FlameGraph's kernel mark
      frames.push_back(
          b.Frame(capture::FrameKind::kNamed, capture::kNone, 0, b.Function(name, capture::kNone)));
      start = semi + 1;
    }
    if (frames.size() > capture::kMaxStackDepth) {
      return where("stack deeper than " + std::to_string(capture::kMaxStackDepth) + " frames");
    }
    std::reverse(frames.begin(), frames.end());  // leaf first
    if (count > 0) b.Sample(0, thread, b.Stack(frames), count, uint32_t(count));
  }
  capture::Capture& c = b.capture();
  c.settings.mode = "import";
  c.settings.metric = "samples";
  c.settings.unit = "count";
  c.settings.recorder = "microscope convert (folded)";
  c.settings.kernel_frames = kernel_frames;
  RETURN_IF_ERROR(capture::ValidateCapture(c));
  return std::move(c);
}

}  // namespace microscope::formats
