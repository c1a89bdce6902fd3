#include "analysis/syscalls.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace microscope::analysis {
namespace {

struct NameEntry {
  uint32_t nr;
  const char* name;
};

constexpr NameEntry kNames[] = {
#include "syscall_table.inc"  // generated in the build root
};

bool IsError(int64_t ret) {
  return ret < 0 && ret >= -4095;
}

}  // namespace

std::string SyscallName(uint32_t nr) {
  auto it = std::lower_bound(std::begin(kNames), std::end(kNames), nr,
                             [](const NameEntry& e, uint32_t n) { return e.nr < n; });
  if (it != std::end(kNames) && it->nr == nr) return it->name;
  return "syscall_" + std::to_string(nr);
}

std::string ErrnoName(int64_t ret) {
  if (!IsError(ret)) return "";
  const char* name = strerrorname_np(int(-ret));
  return name != nullptr ? name : "E" + std::to_string(-ret);
}

SyscallTable ComputeSyscalls(const capture::Capture& c, size_t slowest) {
  SyscallTable t;
  const capture::Syscalls& y = c.syscalls;
  std::map<uint32_t, SyscallRow> by_nr;
  for (size_t i = 0; i < y.size(); ++i) {
    SyscallRow& row = by_nr[y.nr[i]];
    row.nr = y.nr[i];
    ++row.calls;
    row.errors += IsError(y.ret[i]);
    row.total_ns += y.duration[i];
    row.max_ns = std::max(row.max_ns, y.duration[i]);
    ++t.calls;
    t.errors += IsError(y.ret[i]);
    t.total_ns += y.duration[i];
  }
  for (auto& [nr, row] : by_nr) {
    row.name = SyscallName(nr);
    t.rows.push_back(std::move(row));
  }
  std::sort(t.rows.begin(), t.rows.end(), [](const SyscallRow& a, const SyscallRow& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.name < b.name;
  });
  std::vector<size_t> order(y.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  size_t n = std::min(slowest, order.size());
  std::partial_sort(order.begin(), order.begin() + n, order.end(), [&](size_t a, size_t b) {
    if (y.duration[a] != y.duration[b]) return y.duration[a] > y.duration[b];
    return y.time[a] < y.time[b];
  });
  for (size_t k = 0; k < n; ++k) {
    size_t i = order[k];
    t.slowest.push_back({i, y.nr[i], SyscallName(y.nr[i]), y.thread[i], y.time[i], y.duration[i],
                         y.ret[i], y.StackAt(i)});
  }
  return t;
}

}  // namespace microscope::analysis
