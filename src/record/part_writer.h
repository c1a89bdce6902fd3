// Writes the parts of a running recording (snapshots, continuous segments)
// on a thread of its own, so that compacting, naming frames and writing a
// part never hold up collection; and finishes any capture the recording
// writes (FinishCapture), the last one included.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "capture/capture.h"

namespace microscope::record {

struct FinishOptions {
  std::string symbolize = "now";  // RecordOptions::symbolize
  // The targets' views of each module's file (Processor::TargetPaths).
  std::vector<std::vector<std::string>> target_paths;
};

// Makes a capture the processor gave ready to write: drops the dictionary
// rows its event rows do not need, adds module layouts, names frames (when
// symbolize is "now") and checks it.
Status FinishCapture(capture::Capture* c, const FinishOptions& options);

struct PartJob {
  capture::Capture part;  // from Processor::Part (or Finish), not yet finished
  std::string path;
  FinishOptions finish;
  // Called on the writer's thread once written (or not), with the part.
  std::function<void(const Status&, const capture::Capture&)> done;
};

class PartWriter {
 public:
  PartWriter();
  ~PartWriter();  // writes what is queued first
  PartWriter(const PartWriter&) = delete;
  PartWriter& operator=(const PartWriter&) = delete;

  void Submit(PartJob job);
  // Parts submitted and not yet written.
  size_t queued() const;
  // Waits until every part submitted so far is written.
  void Flush();

 private:
  void Loop();

  mutable std::mutex mutex_;
  std::condition_variable work_;  // a job came, or stop
  std::condition_variable idle_;  // a job was written
  std::deque<PartJob> jobs_;
  size_t busy_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace microscope::record
