#include "src/record/cpus.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace microscope::record {
namespace {

constexpr int kMaxCpu = 1 << 20;

Result<std::vector<int>> ReadCpuList(const char* path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Status::Error(StatusCode::kNotFound, std::string("cannot read ") + path);
  Result<std::vector<int>> cpus = ParseCpuList(text.str());
  if (!cpus.ok()) return cpus.status().WithContext(path);
  return cpus;
}

}  // namespace

Result<std::vector<int>> ParseCpuList(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  std::vector<int> cpus;
  size_t at = 0;
  auto number = [&](int* out) {
    const char* begin = text.data() + at;
    auto [end, ec] = std::from_chars(begin, text.data() + text.size(), *out);
    if (ec != std::errc() || *out < 0 || *out >= kMaxCpu) return false;
    at += size_t(end - begin);
    return true;
  };
  auto refused = [&](const char* what) {
    return Status::Error(StatusCode::kDataLoss, std::string("CPU list \"") + std::string(text) +
                                                    "\": " + what + " at byte " +
                                                    std::to_string(at));
  };
  while (at < text.size()) {
    int first, last;
    if (!number(&first)) return refused("no CPU number");
    last = first;
    if (at < text.size() && text[at] == '-') {
      ++at;
      if (!number(&last)) return refused("no CPU number");
      if (last < first) return refused("a range that ends before it starts");
    }
    if (!cpus.empty() && first <= cpus.back()) return refused("CPUs out of order");
    for (int c = first; c <= last; ++c) cpus.push_back(c);
    if (at < text.size() && text[at++] != ',') return refused("no comma");
  }
  return cpus;
}

std::vector<int> RecordedCpus() {
  Result<std::vector<int>> possible = ReadCpuList("/sys/devices/system/cpu/possible");
  Result<std::vector<int>> online = ReadCpuList("/sys/devices/system/cpu/online");
  if (!possible.ok() || !online.ok()) {
    std::vector<int> cpus;
    for (long i = 0, n = sysconf(_SC_NPROCESSORS_ONLN); i < n; ++i) cpus.push_back(int(i));
    return cpus;
  }
  std::vector<int> both;
  std::set_intersection(possible->begin(), possible->end(), online->begin(), online->end(),
                        std::back_inserter(both));
  return both;
}

}  // namespace microscope::record
