// What a runtime's BPF walk copied of the objects that name a frame, the
// first time it met them (CPython's code objects, V8's functions), so that
// code that dies young (freed after a module's import, or a process that
// exits before user space reads it) is still named: regions of the
// process's memory by address, read as the live process is read.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "src/record/process_memory.h"
#include "src/record/target_memory.h"

namespace microscope::runtimes {

struct MemorySnapshot {
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> regions;
  size_t bytes = 0;
  // `size` bytes the walk copied from `address`, within its record's
  // `room` for them; nothing for a region it did not read.
  void Add(uint64_t address, const uint8_t* data, size_t size, size_t room) {
    size = std::min(size, room);
    if (address == 0 || size == 0) return;
    regions.emplace_back(address, std::vector<uint8_t>(data, data + size));
    bytes += size;
  }
};

// Puts `snapshot` under `key` in `by_key` (replacing the one there), its
// bytes counted in `memory` (null: not counted). Returns the change in bytes
// kept, or nothing when the recording's bound refuses it (nothing changes).
template <typename Map>
std::optional<int64_t> KeepSnapshot(Map* by_key, const typename Map::key_type& key,
                                    MemorySnapshot snapshot, record::TargetMemory* memory) {
  auto [it, fresh] = by_key->try_emplace(key);
  const size_t before = fresh ? 0 : it->second.bytes;
  if (memory != nullptr && snapshot.bytes > before && !memory->Take(snapshot.bytes - before)) {
    if (fresh) by_key->erase(it);
    return std::nullopt;
  }
  if (memory != nullptr && snapshot.bytes < before) memory->Give(before - snapshot.bytes);
  const int64_t change = int64_t(snapshot.bytes) - int64_t(before);
  it->second = std::move(snapshot);
  return change;
}

// Reads from the snapshot where it holds the whole range, else from the
// live process: the runtime's reader proves each object as it always does.
class SnapshotMemory final : public record::ProcessMemory {
 public:
  SnapshotMemory(uint32_t pid, record::ProcessMemory* live, const MemorySnapshot& snapshot)
      : ProcessMemory(pid_t(pid)), live_(live), snapshot_(snapshot) {}
  bool Read(uint64_t address, void* out, size_t size) override {
    for (const auto& [start, bytes] : snapshot_.regions) {
      if (address >= start && size <= bytes.size() && address - start <= bytes.size() - size) {
        std::memcpy(out, bytes.data() + (address - start), size);
        return true;
      }
    }
    return live_->Read(address, out, size);
  }

 private:
  record::ProcessMemory* live_;
  const MemorySnapshot& snapshot_;
};

}  // namespace microscope::runtimes
