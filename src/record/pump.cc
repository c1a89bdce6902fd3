#include "src/record/pump.h"

#include <algorithm>
#include <string>

namespace microscope::record {
namespace {

// One event's place in a round: sorted by time, then by where it came from
// (0: the rings, 1 + i: source i), then by its index there. Small keys are
// sorted, not the events.
struct Slot {
  uint64_t time;
  uint32_t from;
  uint32_t index;
  bool operator<(const Slot& o) const {
    return time != o.time ? time < o.time : from != o.from ? from < o.from : index < o.index;
  }
};

// Decodes the arenas' records up to the watermark into `events`; returns
// where each arena's walk stopped.
std::vector<RingArena::Position> DecodeRound(const std::vector<RingArena>& arenas,
                                             const SampleLayout& layout, uint64_t watermark,
                                             Processor* processor, std::vector<Event>* events) {
  std::vector<RingArena::Position> consumed(arenas.size());
  RingPairing& pairing = processor->ring_pairing();
  for (size_t a = 0; a < arenas.size(); ++a) {
    consumed[a] = arenas[a].ForEach([&](uint32_t type, std::span<const uint8_t> record) {
      Result<Event> e = DecodeRecord(record, layout);
      if (!e.ok()) {
        processor->CountProblem("malformed kernel record skipped",
                                "type " + std::to_string(type) + ": " + e.status().message());
        return true;
      }
      // Each ring is in time order: stop at its first record past the watermark.
      if (e->time > watermark) return false;
      if (e->type == EventType::kRaw) {
        pairing.Hold(a, *e);
        return true;
      }
      pairing.Next(a, &*e);
      if (e->type != EventType::kOther) events->push_back(*e);
      return true;
    });
  }
  return consumed;
}

}  // namespace

void PumpArenas(std::vector<RingArena>* arenas, const SampleLayout& layout, uint64_t watermark,
                Processor* processor, std::span<const std::unique_ptr<EventSource>> sources) {
  std::vector<Event> events;
  std::vector<RingArena::Position> consumed =
      DecodeRound(*arenas, layout, watermark, processor, &events);
  std::vector<Slot> order(events.size());
  for (size_t i = 0; i < events.size(); ++i) order[i] = {events[i].time, 0, uint32_t(i)};
  std::vector<size_t> ready(sources.size());
  for (size_t s = 0; s < sources.size(); ++s) {
    const EventSource& source = *sources[s];
    size_t& n = ready[s];
    for (; n < source.pending() && source.time_at(n) <= watermark; ++n) {
      order.push_back({source.time_at(n), uint32_t(1 + s), uint32_t(n)});
    }
  }
  std::sort(order.begin(), order.end());
  for (const Slot& slot : order) {
    if (slot.from == 0) {
      processor->Process(events[slot.index]);
    } else {
      sources[slot.from - 1]->Deliver(slot.index, processor);
    }
  }
  for (size_t s = 0; s < sources.size(); ++s) sources[s]->Consume(ready[s]);
  for (size_t a = 0; a < arenas->size(); ++a) (*arenas)[a].Consume(consumed[a]);
  RingPairing& pairing = processor->ring_pairing();
  pairing.EndRound();
  if (uint64_t unpaired = pairing.TakeUnpaired(watermark == UINT64_MAX); unpaired > 0) {
    processor->CountProblem("runtime walks whose sample was lost",
                            std::to_string(unpaired) + " walks");
  }
}

void ProcessArenas(const std::vector<std::vector<uint8_t>>& arenas, const SampleLayout& layout,
                   Processor* processor) {
  std::vector<RingArena> copy;
  for (const std::vector<uint8_t>& bytes : arenas) copy.emplace_back(bytes);
  PumpArenas(&copy, layout, UINT64_MAX, processor);
}

}  // namespace microscope::record
