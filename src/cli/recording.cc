#include "src/cli/recording.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/plural.h"
#include "src/cli/commands.h"
#include "src/cli/sources.h"

namespace microscope::cli {
namespace {

volatile sig_atomic_t g_stop_signal = 0;
std::atomic<uint64_t> g_snapshot_signals{0};

void OnStopSignal(int sig) {
  g_stop_signal = sig;
}

void OnSnapshotSignal(int) {
  g_snapshot_signals.fetch_add(1, std::memory_order_relaxed);
}

// Ctrl-C, SIGTERM and SIGHUP end a recording (and write the capture).
void CatchStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  // SIGUSR1 asks for a snapshot (named after -o with a number).
  sa.sa_handler = OnSnapshotSignal;
  sigaction(SIGUSR1, &sa, nullptr);
}

// A recording opens an event per thread and CPU.
void RaiseFdLimit() {
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// "recording 1.2 s, 1234 samples, 0 lost", redrawn at most 4 times a
// second, on a terminal only.
class StatusLine {
 public:
  explicit StatusLine(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {}
  void Update(const record::RecordProgress& p) {
    if (!enabled_) return;
    uint64_t now = MonotonicNowNs();
    if (now - last_ < 250'000'000ull) return;
    last_ = now;
    fprintf(stderr, "\r\033[Kmicroscope: recording %.1f s, %llu samples, %llu lost",
            double(p.elapsed_ns) / 1e9, static_cast<unsigned long long>(p.samples),
            static_cast<unsigned long long>(p.lost));
    fflush(stderr);
    shown_ = true;
  }
  void Clear() {
    if (shown_) fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
  uint64_t last_ = 0;
};

std::string SummaryText(const record::RecordOptions& options, const record::RecordSummary& s) {
  std::string what = Counted(s.samples, "sample");
  if (!options.samples)
    what = Counted(s.syscalls, "system call");
  else if (s.syscalls > 0)
    what += ", " + Counted(s.syscalls, "system call");
  if (s.off_cpu > 0) what += ", " + Counted(s.off_cpu, "off-CPU interval");
  return what + ", " + Counted(s.threads, "thread") + ", " +
         Counted(s.processes, "process", "processes") + ", " + std::to_string(s.lost) + " lost";
}

}  // namespace

int RunRecording(const record::RecordOptions& options, bool quiet, const PushOptions& push) {
  RaiseFdLimit();
  CatchStopSignals();
  StatusLine status(!quiet);
  record::RecordHooks hooks;
  hooks.warn = [&](const std::string& line) {
    status.Clear();
    fprintf(stderr, "microscope: %s\n", line.c_str());
  };
  std::unique_ptr<Pusher> pusher;
  if (!push.url.empty()) {
    Result<std::unique_ptr<Pusher>> started = Pusher::Start(push, hooks.warn);
    if (!started.ok()) {
      PrintError(started.status().message());
      return 2;
    }
    pusher = std::move(started).value();
  }
  hooks.progress = [&](const record::RecordProgress& p) { status.Update(p); };
  hooks.stop_signal = [] { return int(g_stop_signal); };
  hooks.written = [&](const std::string& path, const record::RecordSummary& s) {
    if (pusher != nullptr) pusher->Publish(path);
    status.Clear();
    if (!quiet)
      fprintf(stderr, "microscope: wrote %s: %s\n", path.c_str(), SummaryText(options, s).c_str());
  };
  hooks.snapshot_signals = [] { return g_snapshot_signals.load(std::memory_order_relaxed); };
  hooks.part_written = [&](const std::string& path, const Status& written,
                           const record::RecordSummary& s) {
    // Segments go to the store; snapshots (named after -o) stay here.
    if (pusher != nullptr && written.ok() && path.starts_with(options.continuous_dir + "/"))
      pusher->Publish(path);
    if (!written.ok()) {
      fprintf(stderr, "microscope: %s\n", written.WithContext(path).message().c_str());
    } else if (!quiet) {
      fprintf(stderr, "microscope: wrote %s: %s\n", path.c_str(), SummaryText(options, s).c_str());
    }
  };
  Result<int> exit_status = record::RunRecord(options, RecordingSources(), hooks);
  status.Clear();
  if (pusher != nullptr) {
    // What the store did not take in a few seconds stays queued for the next start.
    pusher->Stop(5000);
    PushCounts c = pusher->counts();
    fprintf(stderr,
            "microscope: push: %llu sent, %llu attempts failed, %llu refused, %llu dropped "
            "(queue full), %llu still queued\n",
            static_cast<unsigned long long>(c.sent),
            static_cast<unsigned long long>(c.failed_attempts),
            static_cast<unsigned long long>(c.refused), static_cast<unsigned long long>(c.dropped),
            static_cast<unsigned long long>(c.queued));
  }
  if (!exit_status.ok()) {
    PrintError(exit_status.status().message());
    return 1;
  }
  return *exit_status;
}

}  // namespace microscope::cli
