// Reading pprof (profile.proto, gzipped or not) into a capture: every field
// of untrusted input checked, refused with its place.
#include "formats/pprof.h"

#include <protozero/pbf_reader.hpp>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>

#include "analysis/keys.h"
#include "analysis/labels.h"
#include "analysis/profile.h"
#include "analysis/zones.h"
#include "base/hex.h"
#include "capture/reader.h"
#include "formats/capture_builder.h"
#include "formats/gzip.h"
#include "formats/pprof_fields.h"

namespace microscope::formats {
namespace {

using capture::kNone;
using namespace pprof_fields;

std::vector<uint8_t> Unhex(const std::string& s) {
  std::vector<uint8_t> out;
  if (s.size() % 2 != 0 || s.size() > 128) return out;
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); i += 2) {
    int hi = nib(s[i]), lo = nib(s[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out.push_back(uint8_t(hi * 16 + lo));
  }
  return out;
}

}  // namespace

namespace {

struct PSample {
  std::vector<uint64_t> locations;
  std::vector<int64_t> values;
  std::vector<std::array<int64_t, 3>> labels;  // key, str, num
};
struct PLocation {
  uint64_t mapping = 0, address = 0;
  std::vector<uint64_t> functions;  // one per line, innermost first
  std::vector<int64_t> lines;
};
struct PMapping {
  uint64_t start = 0, limit = 0, offset = 0;
  int64_t filename = 0, build_id = 0;
};
struct Profile {
  std::vector<std::pair<int64_t, int64_t>> sample_types;
  std::vector<PSample> samples;
  std::map<uint64_t, PMapping> mappings;
  std::map<uint64_t, PLocation> locations;
  std::map<uint64_t, std::pair<int64_t, int64_t>> functions;  // id -> (name, filename)
  std::vector<std::string> strings;
  int64_t time = 0, duration = 0, period = 0, default_type = 0;
};

// protozero asserts on a field read with the wrong wire type: check the
// type of every field of untrusted input, and skip a field of another type.
bool IsVarint(const protozero::pbf_reader& r) {
  return r.wire_type() == protozero::pbf_wire_type::varint;
}
bool IsBytes(const protozero::pbf_reader& r) {
  return r.wire_type() == protozero::pbf_wire_type::length_delimited;
}
int64_t Int64(protozero::pbf_reader& r) {
  if (IsVarint(r)) return r.get_int64();
  r.skip();
  return 0;
}
uint64_t Uint64(protozero::pbf_reader& r) {
  if (IsVarint(r)) return r.get_uint64();
  r.skip();
  return 0;
}
protozero::pbf_reader Message(protozero::pbf_reader& r) {
  if (IsBytes(r)) return r.get_message();
  r.skip();
  return protozero::pbf_reader();
}

// A repeated scalar may come packed or one value per field.
template <typename T>
void ReadRepeated(protozero::pbf_reader& r, std::vector<T>* out) {
  if (IsBytes(r)) {
    if constexpr (std::is_signed_v<T>) {
      for (auto v : r.get_packed_int64()) out->push_back(T(v));
    } else {
      for (auto v : r.get_packed_uint64()) out->push_back(T(v));
    }
  } else if (!IsVarint(r)) {
    r.skip();
  } else if constexpr (std::is_signed_v<T>) {
    out->push_back(T(r.get_int64()));
  } else {
    out->push_back(T(r.get_uint64()));
  }
}

std::pair<int64_t, int64_t> ReadValueType(protozero::pbf_reader r) {
  std::pair<int64_t, int64_t> vt{0, 0};
  while (r.next()) {
    if (r.tag() == 1) {
      vt.first = Int64(r);
    } else if (r.tag() == 2) {
      vt.second = Int64(r);
    } else {
      r.skip();
    }
  }
  return vt;
}

PSample ReadSample(protozero::pbf_reader m) {
  PSample s;
  while (m.next()) {
    if (m.tag() == 1) {
      ReadRepeated(m, &s.locations);
    } else if (m.tag() == 2) {
      ReadRepeated(m, &s.values);
    } else if (m.tag() == 3) {
      protozero::pbf_reader l = Message(m);
      std::array<int64_t, 3> label{0, 0, 0};
      while (l.next()) {
        const uint32_t tag = l.tag();
        if (tag >= 1 && tag <= 3) {
          label[tag - 1] = Int64(l);
        } else {
          l.skip();
        }
      }
      s.labels.push_back(label);
    } else {
      m.skip();
    }
  }
  return s;
}

void ReadMapping(protozero::pbf_reader m, Profile* p) {
  uint64_t id = 0;
  PMapping mp;
  while (m.next()) {
    switch (m.tag()) {
      case 1:
        id = Uint64(m);
        break;
      case 2:
        mp.start = Uint64(m);
        break;
      case 3:
        mp.limit = Uint64(m);
        break;
      case 4:
        mp.offset = Uint64(m);
        break;
      case 5:
        mp.filename = Int64(m);
        break;
      case 6:
        mp.build_id = Int64(m);
        break;
      default:
        m.skip();
    }
  }
  p->mappings[id] = mp;
}

void ReadLocation(protozero::pbf_reader m, Profile* p) {
  uint64_t id = 0;
  PLocation loc;
  while (m.next()) {
    if (m.tag() == 1) {
      id = Uint64(m);
    } else if (m.tag() == 2) {
      loc.mapping = Uint64(m);
    } else if (m.tag() == 3) {
      loc.address = Uint64(m);
    } else if (m.tag() == 4) {
      protozero::pbf_reader line = Message(m);
      uint64_t fn = 0;
      int64_t number = 0;
      while (line.next()) {
        const uint32_t tag = line.tag();
        if (tag == 1) {
          fn = Uint64(line);
        } else if (tag == 2) {
          number = Int64(line);
        } else {
          line.skip();
        }
      }
      loc.functions.push_back(fn);
      loc.lines.push_back(number);
    } else {
      m.skip();
    }
  }
  p->locations[id] = std::move(loc);
}

void ReadFunction(protozero::pbf_reader m, Profile* p) {
  uint64_t id = 0;
  int64_t name = 0, filename = 0;
  while (m.next()) {
    const uint32_t tag = m.tag();
    if (tag == 1) {
      id = Uint64(m);
    } else if (tag == 2) {
      name = Int64(m);
    } else if (tag == 4) {
      filename = Int64(m);
    } else {
      m.skip();
    }
  }
  p->functions[id] = {name, filename};
}

// Parses the top level; `offset` follows the field being read, for errors.
void ParseProfile(std::span<const uint8_t> data, Profile* p, size_t* offset) {
  protozero::pbf_reader r(reinterpret_cast<const char*>(data.data()), data.size());
  for (;;) {
    *offset = data.size() - r.length();
    if (!r.next()) break;
    switch (r.tag()) {
      case kSampleType:
        p->sample_types.push_back(ReadValueType(Message(r)));
        break;
      case kSample:
        p->samples.push_back(ReadSample(Message(r)));
        break;
      case kMapping:
        ReadMapping(Message(r), p);
        break;
      case kLocation:
        ReadLocation(Message(r), p);
        break;
      case kFunction:
        ReadFunction(Message(r), p);
        break;
      case kStringTable:
        if (IsBytes(r)) {
          p->strings.push_back(r.get_string());
        } else {
          r.skip();
        }
        break;
      case kTimeNanos:
        p->time = Int64(r);
        break;
      case kDurationNanos:
        p->duration = Int64(r);
        break;
      case kPeriod:
        p->period = Int64(r);
        break;
      case kDefaultSampleType:
        p->default_type = Int64(r);
        break;
      default:
        r.skip();
    }
  }
}

// A location whose one line is a function named as an unnamed frame at its
// own place (module+0xoffset, or its address), with no file or line: what
// WritePprof writes for a frame without a name, read back as one.
bool IsUnnamedFrame(const Profile& p, const PLocation& loc, const capture::Capture& c,
                    capture::ModuleId module, uint64_t offset_in_file) {
  if (loc.functions.size() != 1 || loc.lines[0] != 0) return false;
  auto fn = p.functions.find(loc.functions[0]);
  if (fn == p.functions.end() || fn->second.second != 0) return false;
  const int64_t name = fn->second.first;
  if (name < 0 || size_t(name) >= p.strings.size()) return false;  // the caller's error
  capture::Frame frame;
  frame.module = module;
  frame.address = module != kNone ? offset_in_file : loc.address;
  return p.strings[size_t(name)] == analysis::UnnamedFrameName(c, frame);
}

}  // namespace

Result<capture::Capture> ReadPprof(std::span<const uint8_t> file, const std::string& sample_type,
                                   size_t max_inflated) {
  std::vector<uint8_t> inflated;
  std::span<const uint8_t> data = file;
  if (IsGzip(file)) {
    // A fixed ceiling, whatever the file's size (padding must not raise it).
    ASSIGN_OR_RETURN(inflated, Gunzip(file, max_inflated));
    data = inflated;
  }
  Profile p;
  size_t offset = 0;
  try {
    ParseProfile(data, &p, &offset);
  } catch (const protozero::exception& e) {
    return Status::Error("malformed protobuf in the field at byte " + std::to_string(offset) +
                         ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Status::Error("out of memory reading the field at byte " + std::to_string(offset));
  }
  auto str = [&](int64_t i) -> Result<std::string> {
    if (i < 0 || size_t(i) >= p.strings.size()) {
      return Status::Error("string index " + std::to_string(i) + " is out of range (" +
                           std::to_string(p.strings.size()) + " strings)");
    }
    return p.strings[size_t(i)];
  };
  if (p.strings.empty() || !p.strings[0].empty()) {
    return Status::Error("string_table must start with the empty string");
  }
  if (p.sample_types.empty()) return Status::Error("no sample_type");
  // Which value is the weight, and which (if any) the count.
  size_t weight_index = p.sample_types.size() - 1;
  int count_index = -1;
  for (size_t i = 0; i < p.sample_types.size(); ++i) {
    ASSIGN_OR_RETURN(std::string type, str(p.sample_types[i].first));
    if (p.sample_types[i].first == p.default_type && p.default_type != 0) weight_index = i;
    if (type == "samples" || type == "count") count_index = int(i);
  }
  bool found = false;
  for (size_t i = 0; i < p.sample_types.size(); ++i) {
    ASSIGN_OR_RETURN(std::string type, str(p.sample_types[i].first));
    if (sample_type.empty() ? type == "cpu" : type == sample_type) {
      weight_index = i;
      found = true;
    }
  }
  if (!sample_type.empty() && !found) {
    return Status::Error("no sample type '" + sample_type + "'");
  }
  CaptureBuilder b;
  capture::Capture& c = b.capture();
  ASSIGN_OR_RETURN(c.settings.metric, str(p.sample_types[weight_index].first));
  ASSIGN_OR_RETURN(c.settings.unit, str(p.sample_types[weight_index].second));
  // Locations become frames (leaf first per location: inlined lines first).
  std::map<uint64_t, std::vector<capture::FrameId>> frames_of;
  for (const auto& [id, loc] : p.locations) {
    std::vector<capture::FrameId>& frames = frames_of[id];
    capture::ModuleId module = kNone;
    uint64_t offset_in_file = loc.address;
    if (loc.mapping != 0) {
      auto m = p.mappings.find(loc.mapping);
      if (m == p.mappings.end()) {
        return Status::Error("location " + std::to_string(id) + " names mapping " +
                             std::to_string(loc.mapping) + ", which does not exist");
      }
      ASSIGN_OR_RETURN(std::string path, str(m->second.filename));
      ASSIGN_OR_RETURN(std::string build_id, str(m->second.build_id));
      module = b.Module(path.empty() ? "[unknown]" : path, Unhex(build_id));
      offset_in_file = loc.address - m->second.start + m->second.offset;
    }
    if (IsUnnamedFrame(p, loc, b.capture(), module, offset_in_file)) {
      frames.push_back(module != kNone
                           ? b.Frame(capture::FrameKind::kNative, module, offset_in_file, kNone)
                           : b.Frame(capture::FrameKind::kUnmapped, kNone, loc.address, kNone));
      continue;
    }
    for (size_t line = 0; line < loc.functions.size(); ++line) {
      auto fn = p.functions.find(loc.functions[line]);
      if (fn == p.functions.end()) {
        return Status::Error("location " + std::to_string(id) + " names function " +
                             std::to_string(loc.functions[line]) + ", which does not exist");
      }
      ASSIGN_OR_RETURN(std::string name, str(fn->second.first));
      ASSIGN_OR_RETURN(std::string filename, str(fn->second.second));
      capture::FunctionId function = b.Function(name, module);
      bool outermost = line + 1 == loc.functions.size();
      // The outermost line is the function holding the address; inner
      // lines are the functions inlined there.
      int64_t number = loc.lines[line];
      uint32_t line_number = number > 0 && number <= int64_t(UINT32_MAX) ? uint32_t(number) : 0;
      capture::FrameId frame =
          module == kNone ? b.NamedFrame(function, filename, line_number)
          : outermost     ? b.Frame(capture::FrameKind::kNative, module, offset_in_file, function)
                          : b.InlineFrame(module, offset_in_file, function, line);
      if (line_number != 0) b.SetLine(frame, filename, line_number);
      frames.push_back(frame);
    }
    if (loc.functions.empty()) {  // as pprof itself writes unsymbolized locations
      frames.push_back(module != kNone
                           ? b.Frame(capture::FrameKind::kNative, module, offset_in_file, kNone)
                           : b.Frame(capture::FrameKind::kUnmapped, kNone, loc.address, kNone));
    }
  }
  std::vector<capture::FrameId> stack;
  uint64_t time = p.time > 0 ? uint64_t(p.time) : 0;
  for (size_t i = 0; i < p.samples.size(); ++i) {
    const PSample& s = p.samples[i];
    if (s.values.size() != p.sample_types.size()) {
      return Status::Error("sample " + std::to_string(i) + " has " +
                           std::to_string(s.values.size()) + " values for " +
                           std::to_string(p.sample_types.size()) + " sample types");
    }
    int64_t weight = s.values[weight_index];
    int64_t count = count_index >= 0 ? s.values[size_t(count_index)] : 1;
    if (weight < 0 || count < 0 || count > int64_t(UINT32_MAX)) {
      return Status::Error("sample " + std::to_string(i) +
                           " has a negative or oversized value (diff profiles are not imported)");
    }
    // A row of another quantity only (an off-CPU row read as cpu, a CPU row
    // read as off_cpu).
    if (weight == 0 && p.sample_types.size() > 2) continue;
    stack.clear();
    for (uint64_t loc : s.locations) {
      auto f = frames_of.find(loc);
      if (f == frames_of.end()) {
        return Status::Error("sample " + std::to_string(i) + " names location " +
                             std::to_string(loc) + ", which does not exist");
      }
      if (stack.size() + f->second.size() > capture::kMaxStackDepth) {
        return Status::Error("sample " + std::to_string(i) + " is deeper than " +
                             std::to_string(capture::kMaxStackDepth) + " frames");
      }
      stack.insert(stack.end(), f->second.begin(), f->second.end());
    }
    int64_t pid = 0, tid = 0;
    std::string thread = "pprof";
    for (const auto& label : s.labels) {
      ASSIGN_OR_RETURN(std::string key, str(label[0]));
      if (key == "pid") pid = label[2];
      if (key == "tid") tid = label[2];
      if (key == "thread" || key == "thread_name") {
        ASSIGN_OR_RETURN(thread, str(label[1]));
      }
    }
    capture::StackId node = stack.empty() ? kNone : b.Stack(stack);
    b.Sample(time, b.Thread(int32_t(pid), int32_t(tid), thread), node, uint64_t(weight),
             uint32_t(count));
  }
  c.settings.mode = "import";
  c.settings.recorder = "microscope convert (pprof)";
  c.settings.start_time = time;
  c.settings.end_time = time + uint64_t(std::max<int64_t>(p.duration, 0));
  if (c.settings.metric == "cpu" && p.period > 0)
    c.settings.frequency = uint32_t(1000000000 / p.period);
  RETURN_IF_ERROR(capture::ValidateCapture(c));
  return std::move(c);
}

}  // namespace microscope::formats
