#include "src/cli/recording.h"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "base/clock.h"
#include "base/plural.h"
#include "src/cli/commands.h"

namespace microscope::cli {
namespace {

volatile sig_atomic_t g_stop_signal = 0;

void OnStopSignal(int sig) {
  g_stop_signal = sig;
}

// Ctrl-C, SIGTERM and SIGHUP end a recording (and write the capture).
void CatchStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
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

void PrintSummary(const record::RecordOptions& options, const record::RecordSummary& s) {
  std::string what = Counted(s.samples, "sample");
  if (!options.samples)
    what = Counted(s.syscalls, "system call");
  else if (s.syscalls > 0)
    what += ", " + Counted(s.syscalls, "system call");
  if (s.off_cpu > 0) what += ", " + Counted(s.off_cpu, "off-CPU interval");
  fprintf(stderr, "microscope: wrote %s: %s, %s, %s, %llu lost\n", options.output.c_str(),
          what.c_str(), Counted(s.threads, "thread").c_str(),
          Counted(s.processes, "process", "processes").c_str(),
          static_cast<unsigned long long>(s.lost));
}

}  // namespace

int RunRecording(const record::RecordOptions& options, bool quiet) {
  RaiseFdLimit();
  CatchStopSignals();
  StatusLine status(!quiet);
  record::RecordHooks hooks;
  hooks.warn = [&](const std::string& line) {
    status.Clear();
    fprintf(stderr, "microscope: %s\n", line.c_str());
  };
  hooks.progress = [&](const record::RecordProgress& p) { status.Update(p); };
  hooks.stop_signal = [] { return int(g_stop_signal); };
  hooks.written = [&](const record::RecordSummary& s) {
    status.Clear();
    if (!quiet) PrintSummary(options, s);
  };
  Result<int> exit_status = record::RunRecord(options, hooks);
  status.Clear();
  if (!exit_status.ok()) {
    PrintError(exit_status.status().message());
    return 1;
  }
  return *exit_status;
}

}  // namespace microscope::cli
