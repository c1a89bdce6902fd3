#include "src/runtimes/node/source_map.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace microscope::runtimes::node {
namespace {

constexpr size_t kMaxSegments = size_t(32) << 20;  // about 4 bytes of "mappings" each
constexpr size_t kMaxEntries = size_t(1) << 20;    // sources, names
constexpr size_t kMaxName = 4096;                  // bytes of one source's or name's text

int Base64Digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::string ResolvePath(const std::string& base, std::string_view path) {
  if (path.starts_with("file://")) path.remove_prefix(7);
  if (base.empty() || path.starts_with('/') || path.find("://") != std::string_view::npos)
    return std::string(path);
  std::vector<std::string_view> parts;
  auto push = [&](std::string_view all) {
    while (!all.empty()) {
      const size_t slash = all.find('/');
      const std::string_view part = all.substr(0, slash);
      if (part == "..") {
        if (!parts.empty()) parts.pop_back();
      } else if (!part.empty() && part != ".") {
        parts.push_back(part);
      }
      if (slash == std::string_view::npos) break;
      all.remove_prefix(slash + 1);
    }
  };
  push(base);
  push(path);
  std::string out;
  for (std::string_view p : parts) out.append("/").append(p);
  return out.empty() ? "/" : out;
}

Result<SourceMap> SourceMap::Parse(std::string_view json, const std::string& where,
                                   const std::string& base) {
  auto error = [&](const std::string& why) {
    return Status::Error(StatusCode::kDataLoss, where + ": " + why);
  };
  // Only what is read is kept while parsing: the top level's fields of a
  // map, and strings in its "sources" and "names" (at most kMaxEntries
  // each); anything else a hostile map holds (a million nested arrays) is
  // parsed and dropped, so the tree stays as small as the map's own text.
  static constexpr std::string_view kFields[] = {"version",  "sources",    "names",
                                                 "mappings", "sourceRoot", "sections"};
  size_t entries = 0;
  bool too_many = false, nested = false, listed = false;  // listed: in "sources" or "names"
  const nlohmann::json::parser_callback_t keep = [&](int depth, nlohmann::json::parse_event_t event,
                                                     nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (depth == 1 && event == Event::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      listed = key == "sources" || key == "names";
      return std::find(std::begin(kFields), std::end(kFields), key) != std::end(kFields);
    }
    if (depth >= 2 && (event == Event::object_start || event == Event::array_start)) {
      nested = nested || (depth == 2 && listed);  // a source or name that is no string
      return false;
    }
    if (depth == 2 && listed && event == Event::value) {
      if (++entries > 2 * kMaxEntries) too_many = true;
      return !too_many;
    }
    return true;
  };
  const nlohmann::json j = nlohmann::json::parse(json, keep, /*allow_exceptions=*/false);
  if (too_many) return error("more than " + std::to_string(kMaxEntries) + " sources or names");
  if (j.is_discarded() || !j.is_object()) return error("not a JSON object");
  if (j.contains("sections")) return error("an index map (sections), which is not read");
  if (nested) return error("a source or name that is an array or object");
  if (!j.contains("version") || j["version"] != 3) return error("not a version 3 source map");
  const auto mappings = j.find("mappings");
  const auto sources = j.find("sources");
  if (mappings == j.end() || !mappings->is_string()) return error("no \"mappings\" string");
  if (sources == j.end() || !sources->is_array()) return error("no \"sources\" array");
  std::string root;
  if (auto r = j.find("sourceRoot"); r != j.end() && r->is_string()) root = r->get<std::string>();
  if (!root.empty() && !root.ends_with('/')) root += '/';
  SourceMap map;
  auto strings = [&](const nlohmann::json& array, const char* what, bool paths,
                     std::vector<std::string>* out) -> Status {
    if (array.size() > kMaxEntries)
      return error(std::string("more than ") + std::to_string(kMaxEntries) + " " + what);
    for (size_t i = 0; i < array.size(); ++i) {
      const nlohmann::json& s = array[i];
      std::string text = s.is_string() ? s.get<std::string>() : "";
      if (text.size() > kMaxName) text.resize(kMaxName);
      out->push_back(paths ? ResolvePath(base, root + text) : std::move(text));
    }
    return OkStatus();
  };
  RETURN_IF_ERROR(strings(*sources, "sources", true, &map.sources_));
  if (auto names = j.find("names"); names != j.end() && names->is_array())
    RETURN_IF_ERROR(strings(*names, "names", false, &map.names_));

  // "mappings": lines split by ';', segments by ',', each 1, 4 or 5
  // base64 VLQ fields relative to the last segment's (the column to the
  // last of its line).
  const std::string& m = mappings->get_ref<const std::string&>();
  int64_t source = 0, line = 0, column = 0, name = 0;
  map.lines_.push_back(0);
  size_t at = 0;
  while (at <= m.size()) {
    if (at == m.size() || m[at] == ';') {
      if (map.lines_.size() > kMaxSegments)
        return error("more than " + std::to_string(kMaxSegments) + " lines");
      map.lines_.push_back(uint32_t(map.segments_.size()));
      ++at;
      continue;
    }
    if (m[at] == ',') {
      ++at;
      continue;
    }
    int64_t fields[5];
    int n = 0;
    int64_t generated = map.segments_.empty() || map.lines_.back() == map.segments_.size()
                            ? 0
                            : map.segments_.back().column;
    while (at < m.size() && m[at] != ',' && m[at] != ';') {
      if (n == 5) return error("a segment of more than 5 fields at byte " + std::to_string(at));
      uint64_t value = 0;
      int shift = 0;
      for (;;) {
        if (at == m.size()) return error("a field cut at byte " + std::to_string(at));
        const int digit = Base64Digit(m[at]);
        if (digit < 0) return error("not base64 at byte " + std::to_string(at));
        ++at;
        if (shift > 30) return error("a field past 32 bits at byte " + std::to_string(at));
        value |= uint64_t(digit & 31) << shift;
        shift += 5;
        if ((digit & 32) == 0) break;
      }
      fields[n++] = (value & 1) ? -int64_t(value >> 1) : int64_t(value >> 1);
    }
    if (n != 1 && n != 4 && n != 5)
      return error("a segment of " + std::to_string(n) + " fields before byte " +
                   std::to_string(at));
    if (map.segments_.size() >= kMaxSegments)
      return error("more than " + std::to_string(kMaxSegments) + " segments");
    generated += fields[0];
    Segment s{0, kUnmapped, 0, 0, -1};
    if (generated < 0 || generated > INT32_MAX)
      return error("a column out of range before byte " + std::to_string(at));
    s.column = uint32_t(generated);
    if (n >= 4) {
      source += fields[1];
      line += fields[2];
      column += fields[3];
      if (source < 0 || size_t(source) >= map.sources_.size() || line < 0 || line > INT32_MAX ||
          column < 0 || column > INT32_MAX)
        return error("a source, line or column out of range before byte " + std::to_string(at));
      s.source = uint32_t(source);
      s.line = uint32_t(line);
      s.original_column = uint32_t(column);
    }
    if (n == 5) {
      name += fields[4];
      if (name < 0 || size_t(name) >= map.names_.size())
        return error("a name out of range before byte " + std::to_string(at));
      s.name = int32_t(name);
    }
    map.segments_.push_back(s);
  }
  map.segments_.shrink_to_fit();
  map.lines_.shrink_to_fit();
  // Each line's segments by column (a map need not write them so).
  for (size_t i = 0; i + 1 < map.lines_.size(); ++i) {
    std::stable_sort(map.segments_.begin() + map.lines_[i],
                     map.segments_.begin() + map.lines_[i + 1],
                     [](const Segment& a, const Segment& b) { return a.column < b.column; });
  }
  return map;
}

std::optional<OriginalPlace> SourceMap::Find(uint32_t line, uint32_t column) const {
  if (size_t(line) + 1 >= lines_.size()) return std::nullopt;
  auto begin = segments_.begin() + lines_[line], end = segments_.begin() + lines_[line + 1];
  auto it = std::upper_bound(begin, end, column,
                             [](uint32_t c, const Segment& s) { return c < s.column; });
  if (it == begin) return std::nullopt;
  const Segment& s = *std::prev(it);
  if (s.source == kUnmapped) return std::nullopt;
  return OriginalPlace{s.source, s.line, s.original_column, s.name};
}

uint64_t SourceMap::bytes() const {
  uint64_t n = segments_.capacity() * sizeof(Segment) + lines_.capacity() * sizeof(uint32_t);
  for (const std::string& s : sources_) n += s.size() + sizeof(s);
  for (const std::string& s : names_) n += s.size() + sizeof(s);
  return n;
}

std::optional<std::string> SourceMappingUrl(std::u16string_view source) {
  // The last such comment that starts a line (bundlers and tsc write it
  // last; one inside a string of code does not count); V8 takes the URL up
  // to whitespace or a quote.
  static constexpr std::u16string_view kKeys[] = {u"//# sourceMappingURL=",
                                                  u"//@ sourceMappingURL="};
  auto starts_line = [&](size_t at) {
    while (at > 0 && (source[at - 1] == u' ' || source[at - 1] == u'\t')) --at;
    return at == 0 || source[at - 1] == u'\n' || source[at - 1] == u'\r';
  };
  size_t best = std::u16string_view::npos, key_size = 0;
  for (std::u16string_view key : kKeys) {
    size_t at = source.rfind(key);
    while (at != std::u16string_view::npos && !starts_line(at))
      at = at == 0 ? std::u16string_view::npos : source.rfind(key, at - 1);
    if (at != std::u16string_view::npos && (best == std::u16string_view::npos || at > best)) {
      best = at;
      key_size = key.size();
    }
  }
  if (best == std::u16string_view::npos) return std::nullopt;
  std::string url;
  for (size_t i = best + key_size; i < source.size(); ++i) {
    const char16_t c = source[i];
    if (c == u' ' || c == u'\t' || c == u'\n' || c == u'\r' || c == u'"' || c == u'\'') break;
    if (c > 0x7e || c < 0x21) return std::nullopt;  // a URL is ASCII
    url.push_back(char(c));
  }
  if (url.empty()) return std::nullopt;
  return url;
}

Result<std::string> DecodeDataUrl(std::string_view url, size_t limit) {
  const size_t comma = url.find(',');
  if (!url.starts_with("data:") || comma == std::string_view::npos)
    return Status::Error(StatusCode::kInvalidArgument, "not a data: URL");
  const std::string_view type = url.substr(5, comma - 5);
  if (!type.starts_with("application/json") || !type.ends_with(";base64"))
    return Status::Error(
        StatusCode::kInvalidArgument,
        "a data: URL of " + std::string(type.substr(0, 64)) + ", not of base64 application/json");
  const std::string_view data = url.substr(comma + 1);
  if (data.size() / 4 * 3 > limit)
    return Status::Error(StatusCode::kTooLarge,
                         "a data: URL of more than " + std::to_string(limit) + " bytes");
  std::string out;
  out.reserve(data.size() / 4 * 3);
  uint32_t bits = 0;
  int held = 0;
  for (char c : data) {
    if (c == '=') break;
    const int digit = Base64Digit(c);
    if (digit < 0) return Status::Error(StatusCode::kDataLoss, "a data: URL not in base64");
    bits = (bits << 6) | uint32_t(digit);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(char((bits >> held) & 0xff));
    }
  }
  return out;
}

}  // namespace microscope::runtimes::node
