// The facts a report header shows about a capture: what ran, for how long,
// how much was sampled, what was lost, how stacks ended, what went wrong.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
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

// The gaps of one cause: windows where the recording does not know what
// happened (capture::Gap).
struct GapSummary {
  std::string cause;
  uint64_t gaps = 0;
  uint64_t ns = 0;     // their lengths summed (overlaps counted twice)
  uint64_t count = 0;  // what the cause counts, summed (records lost, ...)
};

struct Summary {
  std::string mode;
  std::string recorder;  // what made it: "microscope 0.x", "perf 6.1.192", an importer
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
  std::optional<uint64_t> lost_task_records;  // of lost_records; unknown before 2.5
  std::optional<uint64_t>
      ring_lost_records;  // of lost_records, the perf rings'; unknown before 2.7
  std::optional<uint64_t> kernel_lost_records;  // the kernel's own count of those
  uint64_t throttles = 0;
  bool kernel_frames = false;
  std::array<uint64_t, capture::kStackEndCount> stack_ends{};
  std::vector<ProcessSummary> processes;  // by pid
  std::vector<ThreadSummary> threads;     // by samples desc, then tid
  std::vector<ProblemSummary> problems;   // by kind
  std::vector<GapSummary> gaps;           // by cause, in capture::GapCause order
  std::vector<std::string> notes;
  // (2.9) The wall clock at the start, which part of a recording this is,
  // and the budget with its changes (times as offsets from the start).
  std::optional<uint64_t> realtime_start;
  std::string part;
  uint64_t part_index = 0;
  std::string recording_id;
  uint32_t budget_ppm = 0;
  std::vector<capture::BudgetStep> budget_steps;
  uint64_t start_time = 0;
  std::vector<capture::SourceSetting> sources;  // each event source asked for, as stored
};

Summary Summarize(const capture::Capture& capture);

// Per-thread totals of the samples a filter keeps, by value desc then tid.
struct ThreadCost {
  int32_t tid;
  int32_t pid;
  std::string name;
  uint64_t samples = 0;
  uint64_t value = 0;
  // Of `samples`, those labeled python.gil (a Python thread's, walked), and
  // of them those that held the GIL.
  uint64_t gil_labeled = 0;
  uint64_t gil_held = 0;
  // The V8 isolate (v8.isolate label: numbered per process) the thread's
  // walked samples ran, "" when none; several, comma-separated.
  std::string isolate;
};
std::vector<ThreadCost> ThreadTotals(const capture::Capture& capture, const SampleFilter& filter);

// Off-CPU time as stored: intervals (incomplete ones counted apart, at
// their stored length), short intervals that were only counted, and the
// breakdowns `report --by-state` prints. Short intervals have no time: a
// --time filter that starts after the recording's start drops them.
struct OffCpuStateTotal {
  uint64_t intervals = 0;  // stored intervals
  uint64_t shorts = 0;     // short intervals, counted only
  uint64_t total_ns = 0;   // both
};

struct OffCpuThreadState {
  capture::ThreadId thread;
  capture::OffCpuState state;
  OffCpuStateTotal total;
};

struct Waker {
  int32_t tid = 0;   // 0: not known
  std::string name;  // the waker's command, when known
  uint64_t count = 0;
  uint64_t total_ns = 0;  // time the woken thread had been off CPU
};

struct ThreadWakers {
  capture::ThreadId thread;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  std::vector<Waker> wakers;  // by time desc, then count, then tid; at most `top_wakers`
};

struct OffCpuSummary {
  std::string status;   // the off-cpu source: "", "on" or "off: why"
  uint64_t min_ns = 0;  // settings.off_cpu_min
  uint64_t intervals = 0;
  uint64_t interval_ns = 0;
  uint64_t cut_at_start = 0, cut_at_start_ns = 0;  // already off CPU when recording began
  uint64_t cut_at_end = 0, cut_at_end_ns = 0;      // still off CPU at the end, or switch-in lost
  uint64_t no_user_stack = 0;
  uint64_t shorts = 0, short_ns = 0;
  std::array<OffCpuStateTotal, capture::kOffCpuStateCount> by_state{};
  std::vector<OffCpuThreadState> by_thread_state;  // by total desc, then tid, then state
  // Who woke each thread (preempted intervals have no waker and are left
  // out): threads by time woken desc, then tid.
  std::vector<ThreadWakers> wakers;
  uint64_t total_ns() const { return interval_ns + short_ns; }
  bool any() const { return intervals > 0 || shorts > 0; }
};

OffCpuSummary SummarizeOffCpu(const capture::Capture& capture, const SampleFilter& filter = {},
                              size_t top_wakers = 5);

}  // namespace microscope::analysis
