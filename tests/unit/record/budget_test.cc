#include <doctest.h>

#include "src/record/budget.h"

using namespace microscope;
using namespace microscope::record;

namespace {

BudgetObservation Period(uint64_t second, uint64_t cpu_ms, uint64_t bpf_ms = 0) {
  return {second * 1'000'000'000ull, 1'000'000'000ull, cpu_ms * 1'000'000ull,
          bpf_ms * 1'000'000ull};
}

}  // namespace

TEST_CASE("Budget: the ladder halves the rate and the unwound bytes in turn, to 10 Hz and 1 KiB") {
  std::vector<BudgetLevel> l = BudgetLadder(999, 16384);
  REQUIRE(l.size() >= 8);
  CHECK(l[0] == BudgetLevel{1, 16384, true, 10});
  CHECK(l[1] == BudgetLevel{2, 16384, true, 10});
  CHECK(l[2] == BudgetLevel{2, 8192, true, 10});
  // The walks go, and rounds lengthen, with the rate at a quarter.
  CHECK(l[3] == BudgetLevel{4, 8192, false, 20});
  CHECK(l[4] == BudgetLevel{4, 4096, false, 20});
  CHECK(l[7] == BudgetLevel{16, 2048, false, 40});
  CHECK(l.back().keep_one_in == 64);  // 999 / 64 = 15 Hz; / 128 would be under 10
  CHECK(l.back().stack_bytes == 1024);
  // Frame-pointer recordings copy no stack: only the rate steps.
  std::vector<BudgetLevel> fp = BudgetLadder(999, 0);
  CHECK(fp.size() == 7);
  CHECK(fp.back() == BudgetLevel{64, 0, false, 40});
  CHECK(BudgetLadder(10, 0).size() == 1);  // nothing cheaper to step to
}

TEST_CASE("Budget: a trace of periods gives the same steps every time") {
  // 1% of one CPU: 10 ms a second.
  auto replay = [] {
    BudgetController c(10000, 999, 16384);
    std::vector<capture::BudgetStep> steps;
    const uint64_t trace[][2] = {{1, 31}, {2, 15}, {3, 9}, {4, 3},  {5, 3},  {6, 3},
                                 {7, 3},  {8, 2},  {9, 5}, {10, 2}, {11, 2}, {12, 2}};
    for (const auto& [second, ms] : trace) {
      if (auto step = c.Observe(Period(second, ms))) steps.push_back(*step);
    }
    return steps;
  };
  std::vector<capture::BudgetStep> steps = replay();
  REQUIRE(steps.size() == 4);
  // 31 ms: over three times the budget, two levels down.
  CHECK(steps[0].time == 1'000'000'000ull);
  CHECK(steps[0].level == 2);
  CHECK(steps[0].frequency == 499);
  CHECK(steps[0].stack_copy == 8192);
  CHECK(steps[0].measured_ppm == 31000);
  CHECK(steps[0].reason == "over budget");
  // 15 ms: over, one more.
  CHECK(steps[1].level == 3);
  CHECK(steps[1].reason == "over budget; runtime frame walks off");
  // 9 ms holds; three periods of 3 ms (under 40%) step back up one.
  CHECK(steps[2].time == 6'000'000'000ull);
  CHECK(steps[2].level == 2);
  CHECK(steps[2].reason == "well under budget for 3 periods");
  // 2 ms, then 5 ms (not under 40%: the count starts again), then three of 2 ms.
  CHECK(steps[3].time == 12'000'000'000ull);
  CHECK(steps[3].level == 1);
  CHECK(replay() == steps);
}

TEST_CASE("Budget: BPF run time counts, the bottom of the ladder holds, level 0 is the top") {
  BudgetController c(10000, 999, 16384);
  CHECK(!c.Observe(Period(1, 6, 3)));  // 9 ms in all: within
  auto step = c.Observe(Period(2, 6, 6));
  REQUIRE(step);
  CHECK(step->measured_ppm == 12000);
  for (int i = 3; i < 40; ++i) c.Observe(Period(i, 500));
  CHECK(c.level() == c.ladder().size() - 1);
  CHECK(!c.Observe(Period(41, 500)));  // nothing cheaper: no step
  for (int i = 42; i < 200; ++i) c.Observe(Period(i, 0));
  CHECK(c.level() == 0);
  CHECK(!c.Observe(Period(201, 0)));
  CHECK(!c.Observe({0, 0, 5, 5}));  // an empty period says nothing
}

TEST_CASE("Budget: --budget takes a share of one CPU in percent") {
  uint32_t ppm = 0;
  CHECK(ParseBudget("1%", &ppm));
  CHECK(ppm == 10000);
  CHECK(ParseBudget("0.5%", &ppm));
  CHECK(ppm == 5000);
  CHECK(ParseBudget("100%", &ppm));
  CHECK(ppm == 1000000);
  for (const char* bad :
       {"", "1", "%", "0%", "-1%", "101%", "1e2%", "abc%", "1.2.3%", "0.00001%"}) {
    CHECK_MESSAGE(!ParseBudget(bad, &ppm), bad);
  }
}
