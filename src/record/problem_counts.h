// Problems a source meets while it records (a malformed walk, a line not
// found), counted by kind with the first example, and put in the capture
// at the source's end: the one counter every runtime uses.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "src/record/row_sink.h"

namespace microscope::record {

class ProblemCounts {
 public:
  void Count(std::string_view kind, std::string_view example) {
    auto [it, fresh] = counts_.try_emplace(std::string(kind));
    if (fresh) it->second.second = std::string(example);
    ++it->second.first;
  }
  // Adds every count to the recording's problems (RowSink::CountProblem).
  void Report(RowSink* sink) const {
    for (const auto& [kind, count_example] : counts_)
      sink->CountProblem(kind, count_example.second, count_example.first);
  }

 private:
  std::map<std::string, std::pair<uint64_t, std::string>, std::less<>> counts_;  // count, example
};

}  // namespace microscope::record
