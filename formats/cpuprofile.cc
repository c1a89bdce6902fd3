#include "formats/cpuprofile.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "capture/reader.h"
#include "formats/capture_builder.h"

namespace microscope::formats {
namespace {

using json = nlohmann::json;

// The JSON text a profile may be (a bigger one is not a profile V8 wrote
// of one run, and its tree in memory would be ten times as large).
constexpr size_t kMaxBytes = size_t(1) << 30;

Status Bad(const std::string& what) {
  return Status::Error(StatusCode::kDataLoss, "not a V8 CPU profile: " + what);
}

}  // namespace

bool LooksLikeCpuProfile(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || text[first] != '{') return false;
  const std::string_view head = text.substr(first, 64);
  return head.find("\"nodes\"") != std::string_view::npos &&
         text.substr(first, 4096).find("\"callFrame\"") != std::string_view::npos;
}

Result<capture::Capture> ReadCpuProfile(std::string_view text) {
  if (text.size() > kMaxBytes) {
    return Status::Error(StatusCode::kTooLarge, "a CPU profile of over 1 GiB of JSON");
  }
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return Status::Error(StatusCode::kDataLoss,
                         "byte " + std::to_string(e.byte) + ": malformed JSON");
  }
  if (!doc.is_object() || !doc.contains("nodes") || !doc["nodes"].is_array())
    return Bad("no \"nodes\" array");
  const json& nodes = doc["nodes"];
  // Each node's call frame, and its parent from the children lists.
  struct Node {
    capture::FrameId frame = capture::kNone;
    int64_t parent = -1;
  };
  std::unordered_map<int64_t, size_t> index;
  std::vector<Node> rows(nodes.size());
  std::vector<int64_t> ids(nodes.size());
  CaptureBuilder b;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const json& n = nodes[i];
    const std::string at = "nodes[" + std::to_string(i) + "]";
    if (!n.is_object() || !n.contains("id") || !n["id"].is_number_integer())
      return Bad(at + " has no integer \"id\"");
    ids[i] = n["id"].get<int64_t>();
    if (!index.emplace(ids[i], i).second)
      return Bad(at + ": id " + std::to_string(ids[i]) + " twice");
    auto cf = n.find("callFrame");
    if (cf == n.end() || !cf->is_object()) return Bad(at + " has no \"callFrame\"");
    std::string name = cf->value("functionName", std::string());
    const std::string url = cf->contains("url") && (*cf)["url"].is_string()
                                ? (*cf)["url"].get<std::string>()
                                : std::string();
    int64_t line = -1;
    if (auto l = cf->find("lineNumber"); l != cf->end() && l->is_number_integer())
      line = l->get<int64_t>();
    if (name.empty()) name = "(anonymous)";
    if (name == "(root)") continue;  // every path's start, not a frame
    const capture::FunctionId f = b.Function(name, capture::kNone);
    // V8 numbers lines from 0; a function's line is where it starts.
    const uint32_t first = line >= 0 && line < INT32_MAX ? uint32_t(line + 1) : 0;
    rows[i].frame = b.NamedFrame(f, url, first);
    if (first != 0) b.SetLine(rows[i].frame, url, first);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto ch = nodes[i].find("children");
    if (ch == nodes[i].end()) continue;
    if (!ch->is_array()) return Bad("nodes[" + std::to_string(i) + "].children is not an array");
    for (const json& c : *ch) {
      if (!c.is_number_integer() || !index.count(c.get<int64_t>()))
        return Bad("nodes[" + std::to_string(i) + "] has a child that is no node");
      Node& child = rows[index[c.get<int64_t>()]];
      if (child.parent != -1) return Bad("node " + c.dump() + " has two parents");
      child.parent = int64_t(i);
    }
  }
  // Each node's stack, leaf first, built once (a cycle or a path deeper
  // than a capture holds is refused).
  std::vector<capture::StackId> stack_of(nodes.size(), capture::kNone);
  std::vector<bool> done(nodes.size(), false);
  std::vector<capture::FrameId> frames;
  auto stack = [&](size_t i) -> Result<capture::StackId> {
    if (done[i]) return stack_of[i];
    frames.clear();
    for (int64_t n = int64_t(i); n != -1; n = rows[n].parent) {
      if (frames.size() > capture::kMaxStackDepth)
        return Bad("node " + std::to_string(ids[i]) + " is deeper than " +
                   std::to_string(capture::kMaxStackDepth) + " frames, or in a cycle");
      if (rows[n].frame != capture::kNone) frames.push_back(rows[n].frame);
    }
    stack_of[i] = frames.empty() ? capture::kNone : b.Stack(frames);
    done[i] = true;
    return stack_of[i];
  };
  if (!doc.contains("samples") || !doc["samples"].is_array()) return Bad("no \"samples\" array");
  const json& samples = doc["samples"];
  const json* deltas = doc.contains("timeDeltas") ? &doc["timeDeltas"] : nullptr;
  if (deltas == nullptr || !deltas->is_array() || deltas->size() != samples.size())
    return Bad("\"timeDeltas\" is not one per sample");
  auto micros = [&](const char* key) -> Result<int64_t> {
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_number()) return Bad("no \"" + std::string(key) + "\"");
    const double v = it->get<double>();
    if (!(v >= 0 && v < 1e15)) return Bad("\"" + std::string(key) + "\" is not a time");
    return int64_t(v);
  };
  ASSIGN_OR_RETURN(int64_t start, micros("startTime"));
  ASSIGN_OR_RETURN(int64_t end, micros("endTime"));
  const capture::ThreadId thread = b.Thread(0, 0, "JavaScript");
  // Each sample's time, and its weight: the time until the next one (the
  // last: until the profile's end), as DevTools counts a sample's time.
  std::vector<int64_t> times(samples.size());
  int64_t t = start;
  uint64_t backwards = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    const json& d = (*deltas)[i];
    if (!d.is_number_integer()) return Bad("timeDeltas[" + std::to_string(i) + "] is not a number");
    int64_t delta = d.get<int64_t>();
    if (delta < 0) {
      ++backwards;
      delta = 0;
    }
    if (delta > int64_t(1e12)) return Bad("timeDeltas[" + std::to_string(i) + "] is not a time");
    t += delta;
    times[i] = t;
  }
  end = std::max(end, t);
  for (size_t i = 0; i < samples.size(); ++i) {
    const json& s = samples[i];
    if (!s.is_number_integer() || !index.count(s.get<int64_t>()))
      return Bad("samples[" + std::to_string(i) + "] names no node");
    ASSIGN_OR_RETURN(capture::StackId st, stack(index[s.get<int64_t>()]));
    const int64_t next = i + 1 < samples.size() ? times[i + 1] : end;
    b.Sample(uint64_t(times[i]) * 1000, thread, st, uint64_t(next - times[i]) * 1000, 1);
  }
  capture::Capture c = std::move(b.capture());
  capture::Settings& set = c.settings;
  set.mode = "import";
  set.metric = "cpu";
  set.unit = "nanoseconds";
  set.recorder = "V8 CPU profile (.cpuprofile)";
  set.start_time = uint64_t(start) * 1000;
  set.end_time = uint64_t(end) * 1000;
  set.notes.push_back(
      "a V8 CPU profile: functions named with their script and first line (V8 records no line "
      "of a sample's own); each sample weighs the time until the next; (idle), (program) and "
      "(garbage collector) are V8's own");
  if (backwards > 0)
    set.notes.push_back(std::to_string(backwards) + " samples went back in time: kept at the last");
  RETURN_IF_ERROR(capture::ValidateCapture(c));
  return c;
}

}  // namespace microscope::formats
