// What the record and syscalls commands share: the process set-up a
// recording needs (open-file limit, stop signals), the status line, the
// lines for parts left out, and the summary once the capture is written.
#pragma once

#include <string>

#include "src/cli/push.h"
#include "src/record/session.h"

namespace microscope::cli {

// Records as `options` say; returns the command's exit status. With a
// push URL, each segment of a continuous recording goes to it (push.h).
int RunRecording(const record::RecordOptions& options, bool quiet, const PushOptions& push = {});

}  // namespace microscope::cli
