#include "src/record/syscall_session.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "capture/reader.h"
#include "capture/string_table.h"
#include "capture/writer.h"
#include "src/record/bpf_syscalls.h"
#include "src/record/session.h"

namespace microscope::record {
namespace {

bool Alive(pid_t pid) {
  return kill(pid, 0) == 0 || errno == EPERM;
}

}  // namespace

Result<int> RunSyscallRecord(const SyscallRecordOptions& options) {
  const bool launch = options.pid == 0;
  if (launch && options.command.empty())
    return Status::Error("nothing to run: give -- PROG ARGS or --pid PID");
  pid_t target = options.pid;
  int gate[2] = {-1, -1};
  if (launch) {
    // The child waits at the gate until the tracer follows it, then execs.
    if (pipe2(gate, O_CLOEXEC) != 0) return Status::Error(std::string("pipe: ") + strerror(errno));
    target = fork();
    if (target < 0) return Status::Error(std::string("fork: ") + strerror(errno));
    if (target == 0) {
      close(gate[1]);
      char c;
      if (read(gate[0], &c, 1) != 1) _exit(127);
      std::vector<char*> argv;
      for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      fprintf(stderr, "microscope: error: cannot run %s: %s\n", argv[0], strerror(errno));
      _exit(127);
    }
    close(gate[0]);
  } else if (!Alive(target)) {
    return Status::Error("no process " + std::to_string(target));
  }
  int32_t pids[] = {target};
  auto tracer = SyscallTracer::Start(pids);
  if (!tracer.ok()) {
    if (launch) {
      kill(target, SIGKILL);
      waitpid(target, nullptr, 0);
    }
    return tracer.status();
  }
  capture::Capture cap;
  capture::Settings& settings = cap.settings;
  FillRecordingHost(&settings);
  settings.mode = launch ? "launch" : "attach";
  settings.command = options.command;
  settings.target_pid = target;
  settings.call_graph = "none";
  settings.symbols = "now";
  settings.notes.push_back("system calls only, traced by BPF (raw_syscalls); no CPU samples");
  const uint64_t start = MonotonicNowNs();
  settings.start_time = start;

  CatchStopSignals();
  if (launch) {
    (void)!write(gate[1], "g", 1);
    close(gate[1]);
  }
  std::vector<SyscallEvent> events;
  int wait_status = 0;
  bool exited = false;
  while (StopSignal() == 0) {
    Status polled = (*tracer)->Poll(100, &events);
    if (!polled.ok()) return polled;
    if (launch) {
      pid_t r = waitpid(target, &wait_status, WNOHANG);
      if (r == target) {
        exited = true;
        break;
      }
    } else if (!Alive(target)) {
      break;
    }
    if (options.duration_ns != 0 && MonotonicNowNs() - start >= options.duration_ns) break;
  }
  for (int i = 0; i < 3; ++i) RETURN_IF_ERROR((*tracer)->Poll(10, &events));
  const uint64_t lost = (*tracer)->lost();
  tracer->reset();
  settings.end_time = MonotonicNowNs();
  if (launch && !exited) {
    kill(target, SIGTERM);  // --duration or Ctrl-C: the program ends with us
    while (waitpid(target, &wait_status, 0) < 0 && errno == EINTR) {
    }
    exited = true;
  }

  // Processes and threads from the events; calls in start order.
  std::stable_sort(events.begin(), events.end(), [](const SyscallEvent& a, const SyscallEvent& b) {
    return a.start_ns < b.start_ns;
  });
  capture::StringTable strings(&cap.strings);
  std::map<uint32_t, capture::ProcessId> processes;
  std::map<uint32_t, capture::ThreadId> threads;
  auto process_of = [&](uint32_t pid) {
    auto [it, inserted] = processes.try_emplace(pid, capture::ProcessId(cap.processes.size()));
    if (inserted) {
      capture::Process p;
      p.pid = int32_t(pid);
      p.start_time = start;
      p.end_time = settings.end_time;
      cap.processes.push_back(p);
    }
    return it->second;
  };
  process_of(uint32_t(target));
  for (const SyscallEvent& e : events) {
    capture::ProcessId p = process_of(e.pid);
    auto [it, inserted] = threads.try_emplace(e.tid, capture::ThreadId(cap.threads.size()));
    if (inserted) {
      capture::Thread t;
      t.tid = int32_t(e.tid);
      t.process = p;
      t.start_time = e.start_ns;
      cap.threads.push_back(t);
    }
    capture::Thread& t = cap.threads[it->second];
    t.name = strings.Intern(e.comm);  // the latest name (exec renames)
    t.end_time = e.start_ns + e.duration_ns;
    if (e.tid == e.pid) cap.processes[p].command = t.name;
    capture::Syscalls& y = cap.syscalls;
    y.time.push_back(e.start_ns);
    y.duration.push_back(e.duration_ns);
    y.thread.push_back(it->second);
    y.nr.push_back(e.nr);
    y.ret.push_back(e.ret);
    y.arg0.push_back(e.args[0]);
    y.arg1.push_back(e.args[1]);
    y.arg2.push_back(e.args[2]);
  }
  if (launch && exited) cap.processes[0].exit_status = ExitStatusForShell(wait_status);
  if (lost > 0) {
    cap.problems.push_back(
        {strings.Intern("system calls lost (BPF ring buffer full)"), lost, capture::kNone});
  }
  Status valid = capture::ValidateCapture(cap);
  if (!valid.ok()) return valid.WithContext("internal error: the syscall capture is inconsistent");
  RETURN_IF_ERROR(capture::WriteCapture(cap, options.output));
  if (!options.quiet) {
    fprintf(stderr,
            "microscope: wrote %s: %zu system calls, %zu threads, %zu processes, %llu lost\n",
            options.output.c_str(), cap.syscalls.size(), cap.threads.size(), cap.processes.size(),
            static_cast<unsigned long long>(lost));
  }
  return launch ? ExitStatusForShell(wait_status) : 0;
}

}  // namespace microscope::record
