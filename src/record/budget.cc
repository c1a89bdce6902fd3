#include "src/record/budget.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace microscope::record {

std::vector<BudgetLevel> BudgetLadder(uint32_t frequency, uint32_t stack_copy) {
  std::vector<BudgetLevel> ladder{{1, stack_copy, true, 10}};
  for (uint32_t step = 1;; ++step) {
    BudgetLevel l = ladder.back();
    const bool can_rate = frequency / (l.keep_one_in * 2) >= 10;
    const bool can_stack = l.stack_bytes > 1024;
    if (!can_rate && !can_stack) break;
    // The rate on odd steps, the unwound bytes on even ones, whichever is
    // left once the other is at its floor.
    if (can_rate && (step % 2 == 1 || !can_stack)) {
      l.keep_one_in *= 2;
    } else {
      l.stack_bytes = std::max<uint32_t>(1024, l.stack_bytes / 2 / 8 * 8);
    }
    l.walks = l.keep_one_in < 4;
    l.round_ms = l.keep_one_in >= 16 ? 40 : l.keep_one_in >= 4 ? 20 : 10;
    ladder.push_back(l);
  }
  return ladder;
}

BudgetController::BudgetController(uint32_t budget_ppm, uint32_t frequency, uint32_t stack_copy)
    : budget_ppm_(budget_ppm),
      frequency_(frequency),
      ladder_(BudgetLadder(frequency, stack_copy)) {}

std::optional<capture::BudgetStep> BudgetController::Observe(const BudgetObservation& o) {
  if (o.wall_ns == 0) return std::nullopt;
  const double share = double(o.cpu_ns + o.bpf_ns) * 1e6 / double(o.wall_ns);
  const uint32_t measured = uint32_t(std::min(share, 4e9));
  const uint32_t top = uint32_t(ladder_.size() - 1);
  uint32_t next = level_;
  std::string reason;
  if (share > budget_ppm_) {
    calm_ = 0;
    const uint32_t steps = share > 4.0 * budget_ppm_ ? 3 : share > 2.0 * budget_ppm_ ? 2 : 1;
    next = std::min(top, level_ + steps);
    reason = level_ == top ? "" : "over budget";
  } else if (share < 0.4 * budget_ppm_ && level_ > 0) {
    if (++calm_ >= 3) {
      calm_ = 0;
      next = level_ - 1;
      reason = "well under budget for 3 periods";
    }
  } else {
    calm_ = 0;
  }
  if (next == level_) return std::nullopt;
  level_ = next;
  const BudgetLevel& l = ladder_[level_];
  return capture::BudgetStep{
      o.time,        level_,   frequency_ / l.keep_one_in,
      l.stack_bytes, measured, reason + (l.walks ? "" : "; runtime frame walks off")};
}

bool ParseBudget(const std::string& text, uint32_t* ppm) {
  if (text.empty() || text.back() != '%') return false;
  const std::string number = text.substr(0, text.size() - 1);
  if (number.empty() || number.find_first_not_of("0123456789.") != std::string::npos) return false;
  double percent = 0;
  auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), percent);
  if (ec != std::errc() || end != number.data() + number.size()) return false;
  if (!(percent > 0) || percent > 100) return false;
  *ppm = uint32_t(std::lround(percent * 1e4));
  return *ppm > 0;
}

}  // namespace microscope::record
