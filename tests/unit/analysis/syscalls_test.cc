#include <doctest/doctest.h>

#include "analysis/syscalls.h"
#include "tests/unit/capture/test_capture.h"

using namespace microscope;

TEST_CASE("Syscalls: names from the kernel's table, errors by errno name") {
  CHECK(analysis::SyscallName(0) == "read");
  CHECK(analysis::SyscallName(1) == "write");
  CHECK(analysis::SyscallName(257) == "openat");
  CHECK(analysis::SyscallName(60) == "exit");
  CHECK(analysis::SyscallName(99999) == "syscall_99999");
  CHECK(analysis::ErrnoName(-2) == "ENOENT");
  CHECK(analysis::ErrnoName(-11) == "EAGAIN");
  CHECK(analysis::ErrnoName(0) == "");
  CHECK(analysis::ErrnoName(3).empty());
  CHECK(analysis::ErrnoName(-5000).empty());  // an address, not an error
}

TEST_CASE("Syscalls: strace -c style table and the slowest calls") {
  capture::Capture c = testing::MakeTestCapture();
  auto add = [&](uint64_t time, uint64_t duration, uint32_t nr, int64_t ret) {
    auto& y = c.syscalls;
    y.time.push_back(time);
    y.duration.push_back(duration);
    y.thread.push_back(0);
    y.nr.push_back(nr);
    y.ret.push_back(ret);
    y.arg0.push_back(0);
    y.arg1.push_back(0);
    y.arg2.push_back(0);
  };
  add(1, 100, 0, 10);     // read
  add(2, 300, 0, -11);    // read, EAGAIN
  add(3, 50, 1, 1);       // write
  add(4, 1000, 257, -2);  // openat, ENOENT
  add(5, 1000, 257, 3);   // openat
  analysis::SyscallTable t = analysis::ComputeSyscalls(c, 3);
  CHECK(t.calls == 5);
  CHECK(t.errors == 2);
  CHECK(t.total_ns == 2450);
  REQUIRE(t.rows.size() == 3);
  CHECK(t.rows[0].name == "openat");
  CHECK(t.rows[0].calls == 2);
  CHECK(t.rows[0].errors == 1);
  CHECK(t.rows[0].max_ns == 1000);
  CHECK(t.rows[0].mean_ns() == 1000);
  CHECK(t.rows[1].name == "read");
  CHECK(t.rows[1].total_ns == 400);
  CHECK(t.rows[1].mean_ns() == 200);
  CHECK(t.rows[2].name == "write");
  REQUIRE(t.slowest.size() == 3);
  CHECK(t.slowest[0].time == 4);  // ties: the earlier first
  CHECK(t.slowest[1].time == 5);
  CHECK(t.slowest[2].name == "read");
  CHECK(t.slowest[2].duration_ns == 300);
}
