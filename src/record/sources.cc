#include "src/record/sources.h"

namespace microscope::record {

Result<std::vector<std::unique_ptr<EventSource>>> StartSources(
    std::span<const SourceKind> kinds, const SourceContext& context,
    const std::function<void(const std::string&)>& warn) {
  std::vector<std::unique_ptr<EventSource>> sources;
  for (const SourceKind& kind : kinds) {
    if (!kind.wanted(context.options)) continue;
    Result<std::unique_ptr<EventSource>> started = kind.start(context);
    if (started.ok()) {
      sources.push_back(std::move(started).value());
      continue;
    }
    if (kind.required(context.options)) return started.status();
    const std::string why = started.status().message();
    context.settings->SetSource(std::string(kind.name), "off: " + why);
    context.settings->notes.push_back(std::string(kind.part) + " not recorded: " + why);
    if (!kind.quiet) warn(std::string(kind.part) + " not recorded: " + why);
  }
  return sources;
}

std::vector<std::string> SharedMapNames(std::span<const SourceKind> kinds) {
  std::vector<std::string> names;
  for (const SourceKind& kind : kinds)
    for (std::string_view name : kind.shared_maps) names.emplace_back(name);
  return names;
}

}  // namespace microscope::record
