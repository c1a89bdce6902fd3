#include "src/record/cpus.h"

#include <doctest.h>
#include <unistd.h>

#include <vector>

using microscope::record::ParseCpuList;
using microscope::record::RecordedCpus;

TEST_CASE("CPU lists: ranges, single CPUs and gaps, as the kernel writes them") {
  CHECK(*ParseCpuList("0-1\n") == std::vector<int>{0, 1});
  CHECK(*ParseCpuList("0") == std::vector<int>{0});
  CHECK(*ParseCpuList("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(*ParseCpuList("2,5") == std::vector<int>{2, 5});
  CHECK(ParseCpuList("\n")->empty());
}

TEST_CASE("CPU lists: anything else is refused, saying where") {
  for (const char* bad : {"3-1", "a", "1,,2", "0-1,1", "1-", "-1", "0-2000000", "1;2"}) {
    auto r = ParseCpuList(bad);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.status().message().find("at byte") != std::string::npos);
  }
}

TEST_CASE("CPU lists: this machine's recorded CPUs are its online ones") {
  std::vector<int> cpus = RecordedCpus();
  CHECK(cpus.size() == size_t(sysconf(_SC_NPROCESSORS_ONLN)));
  for (size_t i = 1; i < cpus.size(); ++i) CHECK(cpus[i - 1] < cpus[i]);
}
