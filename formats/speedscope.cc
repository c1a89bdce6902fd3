#include "formats/speedscope.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <vector>

namespace microscope::formats {

using capture::kNone;

void WriteSpeedscope(FILE* file, const capture::Capture& c, const analysis::FunctionKeys& keys,
                     const analysis::SampleFilter& filter, analysis::Cancel cancel) {
  // Frames used, in order of first use.
  std::vector<int64_t> index(keys.size(), -1);
  std::vector<analysis::KeyId> frames;
  std::vector<std::vector<uint32_t>> by_thread(c.threads.size());
  for (size_t i = 0; i < c.samples.size(); ++i) {
    if (cancel.At(i)) return;
    if (!filter.Keep(c, i)) continue;
    by_thread[c.samples.thread[i]].push_back(uint32_t(i));
    for (uint32_t n = c.samples.stack[i]; n != kNone; n = c.stacks.parent[n]) {
      analysis::KeyId k = keys.KeyOf(c.stacks.frame[n]);
      if (index[k] < 0) {
        index[k] = int64_t(frames.size());
        frames.push_back(k);
      }
    }
  }
  std::string unit = c.settings.unit == "nanoseconds" ? "nanoseconds"
                     : c.settings.unit == "bytes"     ? "bytes"
                                                      : "none";
  std::string out = "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",";
  out += "\"exporter\":\"microscope\",\"name\":" +
         nlohmann::json(c.settings.command.empty() ? std::string("capture") : c.settings.command[0])
             .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
         ",\"activeProfileIndex\":0,\"shared\":{\"frames\":[";
  for (size_t f = 0; f < frames.size(); ++f) {
    nlohmann::json frame = {{"name", keys.Name(frames[f])}};
    std::string module = keys.ModuleName(frames[f]);
    if (!module.empty()) frame["file"] = module;
    if (uint32_t line = keys.FirstLine(frames[f]); line != 0) frame["line"] = line;
    out += (f ? "," : "") + frame.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  out += "]},\"profiles\":[";
  // Streamed per thread: memory stays bounded by one thread's index list.
  auto flush = [&]() {
    fwrite(out.data(), 1, out.size(), file);
    out.clear();
  };
  flush();
  bool first_profile = true;
  std::vector<int64_t> stack;
  for (size_t t = 0; t < c.threads.size(); ++t) {
    const auto& samples = by_thread[t];
    if (samples.empty()) continue;
    const capture::Thread& th = c.threads[t];
    uint64_t total = 0;
    std::string name = c.str(th.name) + " (tid " + std::to_string(th.tid) + ")";
    out += (first_profile ? "" : ",");
    first_profile = false;
    out += "{\"type\":\"sampled\",\"name\":" +
           nlohmann::json(name).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
           ",\"unit\":\"" + unit + "\",\"startValue\":0,\"samples\":[";
    for (size_t j = 0; j < samples.size(); ++j) {
      uint32_t i = samples[j];
      if (cancel.At(i)) return;
      stack.clear();
      for (uint32_t n = c.samples.stack[i]; n != kNone; n = c.stacks.parent[n]) {
        stack.push_back(index[keys.KeyOf(c.stacks.frame[n])]);
      }
      std::reverse(stack.begin(), stack.end());
      out += (j ? ",[" : "[");
      for (size_t k = 0; k < stack.size(); ++k) out += (k ? "," : "") + std::to_string(stack[k]);
      out += "]";
      if (out.size() > (1 << 20)) flush();
    }
    out += "],\"weights\":[";
    for (size_t j = 0; j < samples.size(); ++j) {
      uint32_t i = samples[j];
      uint64_t w = unit == "none" ? c.samples.CountAt(i) : c.samples.weight[i];
      out += (j ? "," : "") + std::to_string(w);
      total += w;
      if (out.size() > (1 << 20)) flush();
    }
    out += "],\"endValue\":" + std::to_string(total) + "}";
  }
  out += "]}\n";
  flush();
}

}  // namespace microscope::formats
