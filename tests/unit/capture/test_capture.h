// A small, valid, hand-built capture for unit tests of the capture and
// analysis layers: main -> run -> {hot x7, cold x3} in one thread.
#pragma once

#include "capture/capture.h"

namespace microscope::testing {

capture::Capture MakeTestCapture();

}  // namespace microscope::testing
