// serve's report queries: a URL's query string (NAME=VALUE&...), as the
// HTTP server hands its decoded pairs to analysis::ParseReportParams.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "analysis/report_params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::pair<std::string, std::string>> params;
  size_t from = 0;
  while (from <= text.size()) {
    size_t amp = std::min(text.find('&', from), text.size());
    std::string pair = text.substr(from, amp - from);
    size_t eq = pair.find('=');
    params.emplace_back(pair.substr(0, eq), eq == std::string::npos ? "" : pair.substr(eq + 1));
    from = amp + 1;
  }
  auto p = microscope::analysis::ParseReportParams(params);
  if (p.ok()) (void)p->query.filter_text.size();
  return 0;
}
