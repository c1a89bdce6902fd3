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

// MakeOffCpuCapture plus probes (sites: 0 zone request, 1 zone parse, 2 mark
// tick, 3 label route, 4 counter depth, 5 zone gen defined at run time):
//   app     request [15,150) holding parse [95,104) (samples 100..103 in
//           parse, 104..109 in request; off-CPU [20,90) in request); route
//           = /a from 60 to 230; tick at 105; depth 3.5 at 195; parse from
//           210, never ended; an end of request at 220 without a begin
//   worker  gen [160,180) and request [170,190), overlapping
capture::Capture MakeProbeCapture();

}  // namespace microscope::testing
