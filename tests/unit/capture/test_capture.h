// A small, valid, hand-built capture for unit tests of the capture and
// analysis layers: main -> run -> {hot x7, cold x3} in one thread, weight
// 1000 ns each.
#pragma once

#include "capture/capture.h"

namespace microscope::testing {

capture::Capture MakeTestCapture();

// MakeTestCapture plus a thread "worker" (tid 101) and off-CPU data, times
// in ns (the recording runs from 10 to 1000):
//   off_cpu  [10,400)  worker sleeping, kernel-only stack, woken by app (100),
//                      cut at the start                                   390
//            [20,90)   app sleeping at main>run>cold>schedule, woken by
//                      worker (101)                                        70
//            [200,500) app uninterruptible, same stack, waker unknown     300
//            [600,900) worker preempted, no stack, cut at the end         300
//   short    app sleeping 5 intervals 50 ns; worker preempted 2, 8 ns
// off_cpu_min 1000 ns; settings.off_cpu "on", syscalls "off: test".
capture::Capture MakeOffCpuCapture();

}  // namespace microscope::testing
