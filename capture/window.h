// Parts of a capture in time: what a rolling window keeps, what a segment
// of a continuous recording takes, and the one profile a directory of
// segments reads as. The recorder cuts event rows out of its live capture
// (TakeEventRows), each part is made to stand alone (compact.h),
// and readers join parts again (MergeCaptures).
#pragma once

#include <cstdint>
#include <vector>

#include "capture/capture.h"

namespace microscope::capture {

// Which event rows a cut takes: those that begin before `before` (samples,
// system calls and probe records by their time; off-CPU intervals and label
// spans by their start, or, with `intervals_by_end`, by their end: a window
// keeps an interval that reaches into it).
struct TimeCut {
  uint64_t before = 0;
  bool intervals_by_end = false;
  // Take the off-CPU short counts too (they have no time: all or none).
  bool short_counts = false;
  // Label rows still growing (the recorder's open spans): copied, not moved.
  const std::vector<char>* open_labels = nullptr;
};

// Moves the event rows `cut` takes out of `live` into the event tables of
// `*taken` (which must be empty; null: the rows are dropped), in the order
// they were in. Dictionaries are left alone. Returns, for each label row
// `live` had, its index now (kNone: moved out).
std::vector<uint32_t> TakeEventRows(Capture* live, const TimeCut& cut, Capture* taken);

// Sorts each event table by time (stably) and drops optional columns that
// hold nothing: the shape a written capture has.
void NormalizeEventRows(Capture* c);
// Puts gaps in the order of their begin (stably), as a capture holds them.
void SortGaps(std::vector<Gap>* gaps);

// One capture of several parts of one recording, in time order (segments
// of a continuous recording): equal rows are one row (strings by text,
// modules by path and build ID, processes by pid and start, threads by tid,
// process and start, functions, frames and stacks by what they hold); event
// rows of all parts in time order. Settings are the first part's, spanning
// from the earliest start to the latest end, with losses and problems
// summed. Each part must be valid; so is the result.
Capture MergeCaptures(std::vector<Capture>&& parts);

}  // namespace microscope::capture
