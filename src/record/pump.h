// The pump: hands the processor every event of a round in time order, the
// perf rings' records (decoded here) merged with the event sources' events.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "src/record/decode.h"
#include "src/record/event_source.h"
#include "src/record/processor.h"

namespace microscope::record {

// Decodes the records at the front of each arena stamped at or before
// `watermark`, takes the sources' pending events stamped at or before it,
// feeds them all to `processor` in time order (at equal times: the rings'
// records, then each source's in the order given), and drops what it fed.
// Malformed records become counted problems.
void PumpArenas(std::vector<RingArena>* arenas, const SampleLayout& layout, uint64_t watermark,
                Processor* processor, std::span<const std::unique_ptr<EventSource>> sources = {});

// Decodes every record of every arena and feeds them to `processor` in time
// order. Malformed records become counted problems.
void ProcessArenas(const std::vector<std::vector<uint8_t>>& arenas, const SampleLayout& layout,
                   Processor* processor);

}  // namespace microscope::record
