// Starting the event sources of a recording: which the options ask for, how
// each starts, and what happens when the kernel refuses one. The list of
// sources is the command's (src/cli/sources.cc): record/ knows none of the
// runtimes or probes that plug in above it.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "src/record/event_source.h"

namespace microscope::record {

struct SourceKind {
  std::string_view name;  // in the capture's settings (capture::SourceSetting)
  std::string_view part;  // how a refusal names it
  // A part every recording tries: refused, it says why in the settings
  // only, not on stderr (an unprivileged user would see it each time).
  bool quiet;
  std::function<bool(const RecordOptions&)> wanted;
  // Refused, the recording stops (otherwise it goes on without the part).
  std::function<bool(const RecordOptions&)> required;
  std::function<Result<std::unique_ptr<EventSource>>(const SourceContext&)> start;
  // The BPF maps its walker shares with every BPF object that walks a
  // thread's frames (SharedBpfMaps): its processes' layouts.
  std::span<const std::string_view> shared_maps = {};
};

// Every kind's shared_maps.
std::vector<std::string> SharedMapNames(std::span<const SourceKind> kinds);

// Starts every source of `kinds` the options ask for, in their order. A
// source the kernel refuses is left out: `warn` gets one line, and the
// capture's settings and notes say why; the recording goes on. Without CPU
// samples (options.samples false) the sources are the recording, and a
// refusal is an error.
Result<std::vector<std::unique_ptr<EventSource>>> StartSources(
    std::span<const SourceKind> kinds, const SourceContext& context,
    const std::function<void(const std::string&)>& warn);

}  // namespace microscope::record
