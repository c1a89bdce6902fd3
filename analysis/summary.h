// The facts a report header shows about a capture: what ran, for how long,
// how much was sampled, what was lost, how stacks ended, what went wrong.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::analysis {

struct ProcessSummary {
  int32_t pid;
  int32_t parent_pid;
  std::string command;
  int32_t exit_status;
  uint64_t samples;
};

struct ThreadSummary {
  int32_t tid;
  int32_t pid;
  std::string name;
  uint64_t samples;
};

struct ProblemSummary {
  std::string kind;
  uint64_t count;
  std::string example;
};

struct Summary {
  std::string mode;
  std::vector<std::string> command;
  int32_t target_pid = 0;
  uint32_t frequency = 0;
  std::string call_graph;
  uint32_t stack_copy = 0;
  uint64_t duration_ns = 0;
  uint64_t samples = 0;
  uint64_t value = 0;        // sum of sample weights, in `unit`
  uint64_t fully_named = 0;  // samples whose every frame has a function name
  std::string symbols;       // settings.symbols: "now", "later", "symbolize" or empty
  std::string metric;
  std::string unit;
  uint64_t lost_records = 0;
  uint64_t lost_samples = 0;
  uint64_t throttles = 0;
  bool kernel_frames = false;
  std::array<uint64_t, capture::kStackEndCount> stack_ends{};
  std::vector<ProcessSummary> processes;  // by pid
  std::vector<ThreadSummary> threads;     // by samples desc, then tid
  std::vector<ProblemSummary> problems;   // by kind
  std::vector<std::string> notes;
};

Summary Summarize(const capture::Capture& capture);

// Per-thread totals of the samples a filter keeps, by value desc then tid.
struct ThreadCost {
  int32_t tid;
  int32_t pid;
  std::string name;
  uint64_t samples = 0;
  uint64_t value = 0;
};
std::vector<ThreadCost> ThreadTotals(const capture::Capture& capture, const SampleFilter& filter);

}  // namespace microscope::analysis
