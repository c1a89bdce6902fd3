#include "src/record/part_writer.h"

#include "capture/compact.h"
#include "capture/reader.h"
#include "capture/window.h"
#include "capture/writer.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::record {

Status FinishCapture(capture::Capture* c, const FinishOptions& options) {
  capture::CompactDictionaries(c);
  c->settings.symbols = options.symbolize;
  symbols::AddModuleLayouts(c, options.target_paths);
  if (options.symbolize == "now") {
    symbols::SymbolizeOptions how;
    how.this_host = true;
    how.target_paths = options.target_paths;
    how.cache_dir = symbols::DefaultCacheDir();
    auto named = symbols::Symbolize(c, how);
    if (!named.ok()) return named.status().WithContext("symbolizing the recording");
  }
  Status valid = capture::ValidateCapture(*c);
  if (!valid.ok()) return valid.WithContext("internal error: the recorded capture is inconsistent");
  return OkStatus();
}

PartWriter::PartWriter() : thread_([this] { Loop(); }) {}

PartWriter::~PartWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void PartWriter::Submit(PartJob job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  work_.notify_all();
}

size_t PartWriter::queued() const {
  std::lock_guard lock(mutex_);
  return jobs_.size() + busy_;
}

void PartWriter::Flush() {
  std::unique_lock lock(mutex_);
  idle_.wait(lock, [this] { return jobs_.empty() && busy_ == 0; });
}

void PartWriter::Loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (jobs_.empty()) return;  // stopping, and nothing is left to write
    PartJob job = std::move(jobs_.front());
    jobs_.pop_front();
    ++busy_;
    lock.unlock();
    Status s = FinishCapture(&job.part, job.finish);
    if (s.ok()) s = capture::WriteCapture(job.part, job.path);
    if (job.done) job.done(s, job.part);
    job = PartJob();  // the part's memory goes before the next is taken
    lock.lock();
    --busy_;
    idle_.notify_all();
  }
}

}  // namespace microscope::record
