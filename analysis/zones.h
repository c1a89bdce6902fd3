// The program's zones (probe records, sdk/) paired into occurrences, and
// what happened inside them. Pure over a validated capture.
//
// Begin and end records pair per thread and site: an end closes the most
// recent open occurrence of its site on its thread, whatever opened since
// (zones of different sites may overlap; nothing assumes they nest). An
// occurrence nests in another only when proven: the other began before it
// and ended after it on the same thread. An end with no open begin, and a
// begin never ended, are kept as incomplete occurrences with the time that
// is not known left unknown: never closed at an invented time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "analysis/filter.h"
#include "capture/capture.h"

namespace microscope::analysis {

inline constexpr uint64_t kUnknownTime = UINT64_MAX;

struct ZoneOccurrence {
  capture::ProbeSiteId site = capture::kNone;
  capture::ThreadId thread = capture::kNone;
  uint64_t begin = kUnknownTime;     // unknown: an end whose begin was not recorded
  uint64_t end = kUnknownTime;       // unknown: still open when the recording ended
  uint32_t parent = capture::kNone;  // the occurrence it is proven to nest in
  uint64_t self_ns = 0;              // complete ones: its time outside its children
  bool complete() const { return begin != kUnknownTime && end != kUnknownTime; }
  uint64_t duration() const { return complete() ? end - begin : 0; }
};

struct Zones {
  // In the order their first known time came (begin, else end).
  std::vector<ZoneOccurrence> occurrences;
};

Zones PairZones(const capture::Capture& c);

// Per (thread, time) point: the innermost occurrence (latest begun) open
// on that thread at that time (InnermostSegments), or kNone. An occurrence
// is open from its begin (inclusive) to its end (exclusive); one with no
// begin holds nothing.
std::vector<uint32_t> InnermostAt(const capture::Capture& c, const Zones& zones,
                                  std::span<const capture::ThreadId> threads,
                                  std::span<const uint64_t> times);

struct ZoneSegment {
  uint64_t begin = 0;
  uint64_t end = 0;  // exclusive
  uint32_t occurrence = capture::kNone;
};

// Per thread: the stretches of time with one innermost occurrence, in time
// order (time inside no zone has no segment). An occurrence open at the
// end lasts to its thread's end, or the recording's: it was open until
// then, as far as anyone knows.
// Where something of `thread` still open when the recording ended (a zone,
// a label) stops: its thread's end, or the recording's; never before `begin`.
uint64_t OpenUntil(const capture::Capture& c, capture::ThreadId thread, uint64_t begin);

std::vector<std::vector<ZoneSegment>> InnermostSegments(const capture::Capture& c,
                                                        const Zones& zones);

// The program's labels, per thread and key: from the record that set a
// value to the one that changed or cleared it (end kUnknownTime: none did),
// in the order they ended.
struct ProbeLabelSpan {
  capture::ThreadId thread = capture::kNone;
  capture::StringId key = capture::kNone;  // the label site's name
  capture::StringId value = capture::kNone;
  uint64_t begin = 0;
  uint64_t end = kUnknownTime;
};
std::vector<ProbeLabelSpan> ProbeLabelSpans(const capture::Capture& c);

// The probes as labels of the samples (capture LabelSpans, for pprof's
// sample labels): key "zone" with the innermost zone's name, and each of the
// program's labels with its value, from the record that set it to the one
// that changed or cleared it (or the thread's end). Appended to `c`.
void AddProbeLabelSpans(capture::Capture* c);
inline constexpr std::string_view kZoneLabel = "zone";

// Per thread, what its probes did in each of `count` time buckets of
// `bucket_ns` from `start` (the lanes' columns): the site of the innermost
// zone that held most of the bucket (kNone: no zone), and whether a mark
// (bit 1) or a label record (bit 2) fell in it.
struct ProbeBuckets {
  std::vector<capture::ProbeSiteId> zone;
  std::vector<uint8_t> events;
};
inline constexpr uint8_t kBucketMark = 1;
inline constexpr uint8_t kBucketLabel = 2;
std::vector<ProbeBuckets> ProbeLaneBuckets(const capture::Capture& c, uint64_t start,
                                           uint64_t bucket_ns, size_t count);

// Per thread, the time spans inside an occurrence of any of `sites`,
// merged, in order (for a filter's binary search).
std::vector<std::vector<std::pair<uint64_t, uint64_t>>> SpansOf(
    const capture::Capture& c, const Zones& zones, std::span<const capture::ProbeSiteId> sites);
// Sorts [begin, end) spans and merges those that overlap or touch.
void MergeSpans(std::vector<std::pair<uint64_t, uint64_t>>* spans);

// The zone sites named `name`, in site order.
std::vector<capture::ProbeSiteId> ZoneSitesNamed(const capture::Capture& c, std::string_view name);

struct Exemplar {
  uint64_t duration = 0;
  uint32_t occurrence = capture::kNone;
};

// A zone site's statistics (report --zones).
struct ZoneStats {
  capture::ProbeSiteId site = capture::kNone;
  uint64_t count = 0;  // complete occurrences
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
  Exemplar p50, p90, p99, max;  // nearest-rank percentiles of the durations
  uint64_t open_at_end = 0;     // begun, never ended
  uint64_t unmatched_ends = 0;  // ended, begin not recorded
  uint64_t samples = 0;         // CPU samples (counts) whose innermost zone it was
  uint64_t sample_weight = 0;   // their weight (capture units)
  uint64_t off_cpu_ns = 0;      // off-CPU time inside it, innermost at the interval's start
  uint64_t off_cpu_intervals = 0;
};

// One row per zone site that recorded anything, by total time, then name.
// With a filter: the occurrences on the threads and in the time it keeps
// (by their begin, or their end when the begin is unknown), and the
// samples and off-CPU intervals it keeps.
std::vector<ZoneStats> ZoneStatistics(const capture::Capture& c, const Zones& zones,
                                      const SampleFilter& filter = SampleFilter());

// The zones table (report --zones): each zone site's statistics, its
// exemplar occurrences named by thread and time, and what else the
// program's probes recorded.
struct ReportZoneExemplar {
  uint64_t duration_ns = 0;
  int32_t tid = 0;
  std::string thread;
  uint64_t at_ns = 0;  // its begin, after the recording's start
};

struct ReportZoneRow {
  std::string name;
  std::string file;  // where the site is ("" unknown)
  uint32_t line = 0;
  uint64_t count = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
  uint64_t mean_ns = 0;
  ReportZoneExemplar p50, p90, p99, max;
  uint64_t open_at_end = 0;
  uint64_t unmatched_ends = 0;
  uint64_t samples = 0;       // CPU samples whose innermost zone it was
  double sample_percent = 0;  // of all CPU samples
  uint64_t off_cpu_ns = 0;
  uint64_t off_cpu_intervals = 0;
};

struct ReportZones {
  std::vector<ReportZoneRow> rows;  // by total time, then name
  size_t shown = 0;                 // rows a table shows (top)
  uint64_t samples = 0;             // all CPU samples
  uint64_t samples_inside = 0;      // ... inside some zone
  uint64_t marks = 0;               // records of the other kinds
  uint64_t label_records = 0;
  uint64_t counter_records = 0;
};

ReportZones BuildZonesReport(const capture::Capture& c, size_t top,
                             const SampleFilter& filter = SampleFilter());

}  // namespace microscope::analysis
