#include "src/record/session.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "capture/reader.h"
#include "capture/writer.h"
#include "src/record/collector.h"
#include "src/symbols/elf_image.h"
#include "src/symbols/kallsyms.h"
#include "src/symbols/line_table.h"
#include "src/symbols/symbolizer.h"

namespace microscope::record {
namespace {

volatile sig_atomic_t g_stop_signal = 0;

void OnStopSignal(int sig) {
  g_stop_signal = sig;
}

uint64_t MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::vector<pid_t> ListTasks(pid_t pid) {
  std::vector<pid_t> tids;
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return tids;
  while (dirent* ent = readdir(d)) {
    if (ent->d_name[0] >= '0' && ent->d_name[0] <= '9') tids.push_back(pid_t(atoi(ent->d_name)));
  }
  closedir(d);
  std::sort(tids.begin(), tids.end());
  return tids;
}

// State letter and parent pid from /proc/PID/stat ("pid (comm) S ppid ...").
bool ReadStat(pid_t pid, char* state, pid_t* ppid) {
  std::string stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 > stat.size()) return false;
  *state = stat[close + 2];
  *ppid = pid_t(atoi(stat.c_str() + close + 4));
  return true;
}

// Gone when no thread is left running: the leader may have exited (a zombie)
// while other threads go on.
bool ProcessGone(pid_t pid) {
  for (pid_t tid : ListTasks(pid)) {
    std::string stat =
        ReadSmallFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/stat");
    size_t close = stat.rfind(')');
    if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' &&
        stat[close + 2] != 'X') {
      return false;
    }
  }
  return true;
}

// Threads whose FORK record is in the arenas: created by a thread whose
// events were already open, so they inherited those events.
std::set<pid_t> ForkedTids(const std::vector<std::vector<uint8_t>>& arenas) {
  std::set<pid_t> tids;
  for (const auto& arena : arenas) {
    for (size_t off = 0; off + sizeof(RecordHeader) <= arena.size();) {
      RecordHeader h;
      std::memcpy(&h, arena.data() + off, sizeof(h));
      if (h.size < sizeof(h) || off + h.size > arena.size()) break;
      if (h.type == kRecordFork && h.size >= 24) {
        uint32_t tid;
        std::memcpy(&tid, arena.data() + off + 16, 4);
        tids.insert(pid_t(tid));
      }
      off += h.size;
    }
  }
  return tids;
}

// Seeds the processor with a running process's threads and executable
// mappings, as perf synthesizes them, at `time` (before the events start).
void SeedFromProc(pid_t pid, uint64_t time, Processor* processor) {
  std::string proc = "/proc/" + std::to_string(pid);
  char state;
  pid_t ppid = 0;
  ReadStat(pid, &state, &ppid);
  std::string comm = Trim(ReadSmallFile(proc + "/comm"));
  processor->AddProcess(uint32_t(pid), uint32_t(ppid), comm, time);
  for (pid_t tid : ListTasks(pid)) {
    std::string name = Trim(ReadSmallFile(proc + "/task/" + std::to_string(tid) + "/comm"));
    processor->AddThread(uint32_t(pid), uint32_t(tid), name, time);
  }
  std::ifstream maps(proc + "/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // "start-end perms offset dev inode   path"
    unsigned long long start, end, offset;
    char perms[8] = {};
    int path_at = 0;
    if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
               &path_at) < 4) {
      continue;
    }
    if (perms[2] != 'x') continue;
    std::string path = path_at > 0 ? line.substr(size_t(path_at)) : "";
    std::vector<uint8_t> build_id;
    if (!path.empty() && path[0] == '/') {
      // map_files reaches the mapped file even when deleted or in another
      // mount namespace.
      char link[64];
      snprintf(link, sizeof(link), "/map_files/%llx-%llx", start, end);
      auto id = symbols::ReadBuildId(proc + link);
      if (!id.ok()) id = symbols::ReadBuildId(path);
      if (id.ok()) build_id = *id;
    }
    processor->AddMapping(uint32_t(pid), start, end, offset, path, build_id, time);
  }
}

void FillHostSettings(capture::Settings* s) {
  utsname u;
  if (uname(&u) == 0) {
    s->host = u.nodename;
    s->kernel_release = u.release;
  }
  s->clock = "CLOCK_MONOTONIC";
  s->boot_id = symbols::BootId();
  s->recorder = "microscope 0.1";
}

uint32_t MaxStack() {
  std::string v = Trim(ReadSmallFile("/proc/sys/kernel/perf_event_max_stack"));
  int n = atoi(v.c_str());
  return n > 0 ? uint32_t(n) : 127;
}

void RaiseFdLimit() {
  rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// The launched child: waits at the gate, then execs. Exec failure is
// reported through `err_fd` (close-on-exec, so success closes it silently).
[[noreturn]] void RunChild(int gate_fd, int err_fd, const std::vector<std::string>& command) {
  char c;
  ssize_t n;
  do {
    n = read(gate_fd, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(127);  // the recorder went away: do not run unprofiled
  std::vector<char*> argv;
  for (const std::string& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  execvp(argv[0], argv.data());
  int err = errno;
  ssize_t ignored = write(err_fd, &err, sizeof(err));
  (void)ignored;
  _exit(127);
}

int ShellStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

class StatusLine {
 public:
  explicit StatusLine(bool enabled) : enabled_(enabled && isatty(STDERR_FILENO)) {}
  void Update(uint64_t elapsed_ns, const Collector& c) {
    if (!enabled_) return;
    uint64_t now = MonotonicNow();
    if (now - last_ < 250'000'000ull) return;
    last_ = now;
    fprintf(stderr, "\r\033[Kmicroscope: recording %.1f s, %llu samples, %llu lost",
            double(elapsed_ns) / 1e9, static_cast<unsigned long long>(c.samples()),
            static_cast<unsigned long long>(c.lost()));
    fflush(stderr);
    shown_ = true;
  }
  void Clear() {
    if (shown_) fprintf(stderr, "\r\033[K");
  }

 private:
  bool enabled_;
  bool shown_ = false;
  uint64_t last_ = 0;
};

// A BPF part the kernel refused: the recording goes on without it, and one
// line on stderr, a note and the part's setting say why.
void GoOnWithout(const char* part, const Status& why, std::string* setting,
                 capture::Settings* settings) {
  *setting = "off: " + why.message();
  settings->notes.push_back(std::string(part) + " not recorded: " + why.message());
  fprintf(stderr, "microscope: %s not recorded: %s\n", part, why.message().c_str());
}

// Starts the off-CPU tracer for `target`, or goes on without it.
std::unique_ptr<OffCpuTracer> StartOffCpu(const RecordOptions& options, pid_t target, bool launch,
                                          capture::Settings* settings) {
  OffCpuTracer::Options o;
  o.min_ns = options.off_cpu_min_ns;
  o.stack_copy = options.stack_copy;
  int32_t pids[] = {target};
  auto tracer = OffCpuTracer::Start(o, pids);
  if (!tracer.ok()) {
    GoOnWithout("off-CPU time", tracer.status(), &settings->off_cpu, settings);
    return nullptr;
  }
  settings->off_cpu = "on";
  settings->off_cpu_min = options.off_cpu_min_ns;
  settings->notes.push_back(
      "off-CPU: sched_switch intervals of the target's threads (BPF); shorter than " +
      std::to_string(options.off_cpu_min_ns / 1000) +
      " us only counted; user stacks of blocked system calls taken at their exit, of "
      "preemptions at switch-in");
  if (!launch) {
    // Threads already blocked began their interval before the recording.
    auto off_state = [](pid_t tid) {  // -1: running, gone or unreadable
      char state = 0;
      pid_t ppid = 0;
      return ReadStat(tid, &state, &ppid) ? OffCpuStateOfLetter(state) : -1;
    };
    std::vector<pid_t> seeded;
    for (pid_t tid : ListTasks(target)) {
      int off = off_state(tid);
      if (off >= 0 && (*tracer)->SeedOffCpu(target, tid, uint8_t(off)).ok()) seeded.push_back(tid);
    }
    // A thread that woke between the look and the seed would carry a false
    // interval until its next switch: look again.
    for (pid_t tid : seeded) {
      if (off_state(tid) < 0) (*tracer)->Unseed(tid);
    }
  }
  return std::move(tracer).value();
}

// Starts the system call tracer for `target`. Without it a recording of
// samples goes on (one line and the settings say why); a recording of
// system calls only cannot.
Result<std::unique_ptr<SyscallTracer>> StartSyscalls(const RecordOptions& options, pid_t target,
                                                     capture::Settings* settings) {
  SyscallTracer::Options o;
  o.stack_min_ns = options.syscall_stack_min_ns;
  o.stack_copy = options.stack_copy;
  int32_t pids[] = {target};
  auto tracer = SyscallTracer::Start(o, pids);
  if (!tracer.ok()) {
    if (!options.samples) return tracer.status();
    GoOnWithout("system calls", tracer.status(), &settings->syscalls, settings);
    return std::unique_ptr<SyscallTracer>();
  }
  settings->syscalls = "on";
  settings->syscall_stack_min = options.syscall_stack_min_ns;
  std::string note = "system calls: raw_syscalls enter/exit of the target's threads (BPF)";
  if (options.syscall_stack_min_ns != 0) {
    note += "; calls of at least " + std::to_string(options.syscall_stack_min_ns / 1000) +
            " us carry the caller's user stack";
  }
  settings->notes.push_back(note);
  return std::move(tracer).value();
}

// Sorts what was appended to `list` after `sorted` (already in order) and
// merges it in.
template <typename T, typename Less>
void SortNewPart(std::vector<T>* list, size_t sorted, Less less) {
  auto mid = list->begin() + ptrdiff_t(sorted);
  std::stable_sort(mid, list->end(), less);
  std::inplace_merge(list->begin(), mid, list->end(), less);
}

// The BPF parts of a recording: the tracers and what they sent, waiting for
// the pump.
struct BpfParts {
  std::unique_ptr<OffCpuTracer> off_cpu;
  std::unique_ptr<SyscallTracer> syscalls;
  BpfEvents events;

  // The BPF rings' fds, to wait on with the perf rings.
  std::vector<int> WaitFds() const {
    std::vector<int> fds;
    if (off_cpu != nullptr) fds.push_back(off_cpu->wait_fd());
    if (syscalls != nullptr) fds.push_back(syscalls->wait_fd());
    return fds;
  }

  Status Start(const RecordOptions& options, pid_t target, bool launch,
               capture::Settings* settings) {
    if (options.off_cpu) off_cpu = StartOffCpu(options, target, launch, settings);
    if (options.syscalls) {
      ASSIGN_OR_RETURN(syscalls, StartSyscalls(options, target, settings));
    }
    return OkStatus();
  }

  // Takes what the tracers have (at the end, what remains in their maps
  // too), dropping what lies outside [start, end) (launch mode only for the
  // start: an attach keeps the intervals it cut).
  void Poll(bool finish, bool launch, uint64_t start, uint64_t end, Processor* processor) {
    if (off_cpu != nullptr) {
      std::vector<OffCpuInterval>& list = events.off_cpu;
      size_t before = list.size();
      Status polled = finish ? off_cpu->Finish(&list) : off_cpu->Poll(0, &list);
      if (!polled.ok()) processor->CountProblem("off-CPU events not read", polled.message());
      // Outside the recording: in launch mode the wait at the gate, before
      // exec, which is not the program's; and what began after the end.
      list.erase(std::remove_if(list.begin() + ptrdiff_t(before), list.end(),
                                [&](const OffCpuInterval& iv) {
                                  return iv.start_ns != 0 &&
                                         ((launch && iv.start_ns < start) || iv.start_ns >= end);
                                }),
                 list.end());
      for (size_t i = std::min(before, list.size()); i < list.size(); ++i) {
        if (list[i].time_ns == 0) list[i].time_ns = MonotonicNow();  // still open at the end
      }
      SortNewPart(
          &list, std::min(before, list.size()),
          [](const OffCpuInterval& a, const OffCpuInterval& b) { return a.time_ns < b.time_ns; });
    }
    if (syscalls != nullptr) {
      std::vector<SyscallEvent>& list = events.syscalls;
      size_t before = list.size();
      Status polled = syscalls->Poll(0, &list);
      if (!polled.ok()) processor->CountProblem("system call events not read", polled.message());
      list.erase(std::remove_if(list.begin() + ptrdiff_t(before), list.end(),
                                [&](const SyscallEvent& e) {
                                  return (launch && e.start_ns < start) || e.start_ns >= end;
                                }),
                 list.end());
      SortNewPart(
          &list, std::min(before, list.size()),
          [](const SyscallEvent& a, const SyscallEvent& b) { return a.end_ns() < b.end_ns(); });
    }
  }

  // Counts and losses, once the last events went through the pump.
  void Finish(Processor* processor, capture::Settings* settings) {
    if (off_cpu != nullptr) {
      for (const OffCpuShortCount& c : off_cpu->ShortCounts()) processor->AddOffCpuShort(c);
      OffCpuLoss loss = off_cpu->Loss();
      if (loss.intervals > 0) {
        processor->CountProblem("off-CPU intervals lost (BPF ring buffer full)",
                                std::to_string(loss.intervals) + " intervals, " +
                                    std::to_string(loss.total_ns / 1000000) + " ms");
        settings->lost_records += loss.intervals;
      }
      if (loss.malformed > 0) {
        processor->CountProblem("malformed off-CPU events dropped",
                                std::to_string(loss.malformed) + " events");
      }
      if (loss.untracked > 0) {
        processor->CountProblem("off-CPU switch-outs not tracked (map of open intervals full)",
                                std::to_string(loss.untracked) + " times");
      }
      off_cpu.reset();
    }
    if (syscalls != nullptr) {
      if (uint64_t lost = syscalls->lost(); lost > 0) {
        processor->CountProblem("system calls lost (BPF ring buffer full)",
                                std::to_string(lost) + " calls");
        settings->lost_records += lost;
      }
      syscalls.reset();
    }
  }
};

}  // namespace

void PumpArenas(std::vector<std::vector<uint8_t>>* arenas, const SampleLayout& layout,
                uint64_t watermark, Processor* processor, BpfEvents* bpf) {
  std::vector<Event> events;
  std::vector<size_t> consumed(arenas->size());
  for (size_t a = 0; a < arenas->size(); ++a) {
    const std::vector<uint8_t>& arena = (*arenas)[a];
    size_t off = 0;
    while (off + sizeof(RecordHeader) <= arena.size()) {
      RecordHeader h;
      std::memcpy(&h, arena.data() + off, sizeof(h));
      if (h.size < sizeof(h) || off + h.size > arena.size()) {
        off = arena.size();  // cannot happen after CopyRingRecords; never loop on it
        break;
      }
      Result<Event> e = DecodeRecord(std::span(arena).subspan(off, h.size), layout);
      if (e.ok()) {
        // Each ring is in time order: stop at its first record past the watermark.
        if (e->time > watermark) break;
        if (e->type != EventType::kOther) events.push_back(*e);
      } else {
        processor->CountProblem("malformed kernel record skipped",
                                "type " + std::to_string(h.type) + ": " + e.status().message());
      }
      off += h.size;
    }
    consumed[a] = off;
  }
  // Merge the CPUs' rings and the BPF lists by time; sort small keys, not
  // the events. Keys number the ring events, then the intervals, then the calls.
  std::vector<std::pair<uint64_t, uint32_t>> order(events.size());
  for (size_t i = 0; i < events.size(); ++i) order[i] = {events[i].time, uint32_t(i)};
  size_t intervals = 0, calls = 0;
  const size_t calls_from = events.size() + (bpf != nullptr ? bpf->off_cpu.size() : 0);
  if (bpf != nullptr) {
    for (; intervals < bpf->off_cpu.size() && bpf->off_cpu[intervals].time_ns <= watermark;
         ++intervals) {
      order.push_back({bpf->off_cpu[intervals].time_ns, uint32_t(events.size() + intervals)});
    }
    for (; calls < bpf->syscalls.size() && bpf->syscalls[calls].end_ns() <= watermark; ++calls) {
      order.push_back({bpf->syscalls[calls].end_ns(), uint32_t(calls_from + calls)});
    }
  }
  std::sort(order.begin(), order.end());
  for (const auto& [time, i] : order) {
    if (i < events.size()) {
      processor->Process(events[i]);
    } else if (i < calls_from) {
      processor->AddOffCpu(bpf->off_cpu[i - events.size()]);
    } else {
      processor->AddSyscall(bpf->syscalls[i - calls_from]);
    }
  }
  if (bpf != nullptr) {
    bpf->off_cpu.erase(bpf->off_cpu.begin(), bpf->off_cpu.begin() + ptrdiff_t(intervals));
    bpf->syscalls.erase(bpf->syscalls.begin(), bpf->syscalls.begin() + ptrdiff_t(calls));
  }
  for (size_t a = 0; a < arenas->size(); ++a) {
    auto& arena = (*arenas)[a];
    arena.erase(arena.begin(), arena.begin() + ptrdiff_t(consumed[a]));
  }
}

void ProcessArenas(const std::vector<std::vector<uint8_t>>& arenas, const SampleLayout& layout,
                   Processor* processor) {
  std::vector<std::vector<uint8_t>> copy = arenas;
  PumpArenas(&copy, layout, UINT64_MAX, processor);
}

Result<int> RunRecord(const RecordOptions& options) {
  RaiseFdLimit();
  CollectorOptions copts;
  copts.frequency = options.frequency;
  copts.sample = options.samples;
  const bool copy_stack =
      options.samples && options.call_graph != Processor::CallGraph::kFramePointer;
  copts.stack_copy = copy_stack ? options.stack_copy : 0;
  // Each sample takes about stack_copy bytes of ring with a stack copy:
  // size each CPU's ring for a quarter second of samples (1 to 64 MiB).
  uint32_t pages = 256;
  if (copy_stack) {
    uint64_t want = uint64_t(copts.stack_copy + 512) * options.frequency / 4 / 4096;
    pages = 256;
    while (pages < want && pages < 16384) pages *= 2;
  }
  copts.ring_pages = options.mmap_pages != 0 ? options.mmap_pages : pages;
  ASSIGN_OR_RETURN(std::unique_ptr<Collector> collector, Collector::Create(copts));
  Processor::Options popts;
  popts.max_stack = MaxStack();
  popts.call_graph = options.call_graph;
  Processor processor(popts);
  capture::Settings& settings = processor.settings();
  FillHostSettings(&settings);
  settings.frequency = options.frequency;
  settings.stack_copy = copts.stack_copy;
  switch (options.call_graph) {
    case Processor::CallGraph::kFramePointer:
      settings.call_graph = "fp";
      settings.notes.push_back("call graph fp: user frames from the kernel's frame-pointer chain");
      break;
    case Processor::CallGraph::kDwarf:
      settings.call_graph = "dwarf";
      settings.notes.push_back(
          "call graph dwarf: user frames unwound from copied registers and stack by CFI "
          "(.eh_frame, .debug_frame) only");
      break;
    case Processor::CallGraph::kAuto:
      settings.call_graph = "auto";
      settings.notes.push_back(
          "call graph auto: user frames unwound by CFI where a module has it, by frame "
          "pointers (in the copied stack) where a module has none");
      break;
  }
  if (options.samples) {
    settings.notes.push_back("preset " + options.preset);
  } else {
    settings.frequency = 0;
    settings.notes.push_back("no CPU samples: BPF parts only");
  }

  const bool launch = options.pid == 0;
  pid_t target = options.pid;
  int gate[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  uint64_t start = MonotonicNow();
  BpfParts bpf;

  if (launch) {
    settings.mode = "launch";
    settings.command = options.command;
    if (pipe2(gate, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
      return Status::Error(std::string("pipe: ") + std::strerror(errno));
    }
    target = fork();
    if (target < 0) return Status::Error(std::string("fork: ") + std::strerror(errno));
    if (target == 0) {
      close(gate[1]);
      close(err_pipe[0]);
      RunChild(gate[0], err_pipe[1], options.command);
    }
    close(gate[0]);
    close(err_pipe[1]);
    Status opened = collector->AddTask(target, /*enable_on_exec=*/true);
    if (!opened.ok()) {
      close(gate[1]);  // cancels the child: it exits without running the program
      waitpid(target, nullptr, 0);
      return opened;
    }
    Status bpf_started = bpf.Start(options, target, true, &settings);
    if (!bpf_started.ok()) {
      close(gate[1]);
      waitpid(target, nullptr, 0);
      return bpf_started;
    }
    std::string base = options.command[0].substr(options.command[0].rfind('/') + 1);
    start = MonotonicNow();
    processor.AddProcess(uint32_t(target), uint32_t(getpid()), base.substr(0, 15), start);
    processor.AddThread(uint32_t(target), uint32_t(target), base.substr(0, 15), start);
  } else {
    settings.mode = "attach";
    if (kill(target, 0) != 0 && errno == ESRCH) {
      return Status::Error("no process with pid " + std::to_string(target));
    }
    // Open events on every thread. A thread started meanwhile by a thread
    // whose events were open inherited them (its FORK record shows it): it
    // gets no events of its own, or it would be sampled twice. List again
    // until no thread is new.
    start = MonotonicNow();
    std::set<pid_t> opened;
    for (pid_t tid : ListTasks(target)) {
      RETURN_IF_ERROR(collector->AddTask(tid, /*enable_on_exec=*/false));
      opened.insert(tid);
    }
    if (opened.empty()) return Status::Error("no process with pid " + std::to_string(target));
    for (int round = 0; round < 100; ++round) {
      std::vector<pid_t> fresh;
      for (pid_t tid : ListTasks(target)) {
        if (!opened.count(tid)) fresh.push_back(tid);
      }
      if (fresh.empty()) break;
      usleep(10000);  // a FORK record is written just after the thread becomes visible
      collector->Drain();
      std::set<pid_t> inherited = ForkedTids(collector->arenas());
      for (pid_t tid : fresh) {
        if (!inherited.count(tid))
          RETURN_IF_ERROR(collector->AddTask(tid, /*enable_on_exec=*/false));
        opened.insert(tid);
      }
    }
    std::string cmdline = ReadSmallFile("/proc/" + std::to_string(target) + "/cmdline");
    for (size_t at = 0; at < cmdline.size();) {
      size_t nul = cmdline.find('\0', at);
      if (nul == std::string::npos) nul = cmdline.size();
      settings.command.push_back(cmdline.substr(at, nul - at));
      at = nul + 1;
    }
    SeedFromProc(target, start, &processor);
    RETURN_IF_ERROR(bpf.Start(options, target, false, &settings));
  }
  settings.target_pid = target;
  settings.start_time = start;

  CatchStopSignals();

  int wait_status = 0;
  bool exited = false;
  if (launch) {
    // A child that died before the gate opens must not kill us with SIGPIPE
    // (set after the fork: the program keeps the default).
    signal(SIGPIPE, SIG_IGN);
    char go = 1;
    if (write(gate[1], &go, 1) != 1) return Status::Error("cannot release the launched program");
    close(gate[1]);
    int err = 0;
    ssize_t n = read(err_pipe[0], &err, sizeof(err));
    close(err_pipe[0]);
    if (n == sizeof(err)) {
      waitpid(target, nullptr, 0);
      return Status::Error("cannot run " + options.command[0] + ": " + std::strerror(err));
    }
  }

  StatusLine status(!options.quiet);
  const std::vector<int> bpf_fds = bpf.WaitFds();
  bool by_duration = false;
  uint64_t previous_drain = start;
  for (;;) {
    collector->Wait(50, bpf_fds);
    uint64_t now = MonotonicNow();
    collector->Drain();
    bpf.Poll(false, launch, start, UINT64_MAX, &processor);
    // Records stamped before the previous drain began were in the rings then
    // (the kernel writes a record as it stamps it; 10 ms is the margin), so
    // they can be processed now without any earlier record still to come.
    // This keeps memory bounded by a round's records, not the recording's.
    if (previous_drain > start + 10'000'000) {
      PumpArenas(&collector->arenas(), collector->layout(), previous_drain - 10'000'000, &processor,
                 &bpf.events);
    }
    previous_drain = now;
    status.Update(now - start, *collector);
    if (launch) {
      pid_t r = waitpid(target, &wait_status, WNOHANG);
      if (r == target) {
        exited = true;
        break;
      }
    } else if (ProcessGone(target)) {
      break;
    }
    if (g_stop_signal != 0) break;
    if (options.duration_ns != 0 && now - start >= options.duration_ns) {
      by_duration = true;
      break;
    }
  }
  uint64_t end = MonotonicNow();
  (void)collector->Disable();
  if (launch && !exited) {
    // --duration ends the program as `timeout` would; a SIGTERM or SIGHUP
    // sent to microscope alone is passed on. After Ctrl-C the program got the
    // terminal's SIGINT itself and ends as it chooses.
    if (by_duration) kill(target, SIGTERM);
    if (g_stop_signal == SIGTERM || g_stop_signal == SIGHUP) kill(target, g_stop_signal);
  }
  collector->Drain();
  bpf.Poll(true, launch, start, end, &processor);
  status.Clear();

  settings.end_time = end;
  settings.kernel_frames = collector->kernel_frames();
  if (!collector->kernel_frames()) {
    settings.notes.push_back("kernel frames off: not permitted (" + PermissionAdvice() + ")");
  }
  if (collector->ring_shrunk()) {
    settings.notes.push_back(
        "ring buffer reduced to " + std::to_string(collector->ring_pages()) +
        " pages per CPU by the locked-memory limit (kernel.perf_event_mlock_kb)");
  }
  if (collector->ring_errors() > 0) {
    processor.CountProblem("corrupt ring data dropped",
                           std::to_string(collector->ring_errors()) + " times");
  }
  PumpArenas(&collector->arenas(), collector->layout(), UINT64_MAX, &processor, &bpf.events);
  bpf.Finish(&processor, &settings);
  if (exited) processor.SetExitStatus(uint32_t(target), ShellStatus(wait_status));
  capture::Capture cap = processor.Finish(end);
  cap.settings.symbols = options.symbolize;
  symbols::AddModuleLayouts(&cap);
  if (options.symbolize == "now") {
    symbols::SymbolizeOptions how;
    how.this_host = true;
    how.cache_dir = symbols::DefaultCacheDir();
    auto named = symbols::Symbolize(&cap, how);
    if (!named.ok()) return named.status().WithContext("symbolizing the recording");
  }
  Status valid = capture::ValidateCapture(cap);
  if (!valid.ok()) return valid.WithContext("internal error: the recorded capture is inconsistent");
  const uint64_t sample_count = cap.samples.size();
  const uint64_t lost = cap.settings.lost_records + cap.settings.lost_samples;
  collector.reset();  // release fds and rings before the (possibly slow) write
  Status written = capture::WriteCapture(cap, options.output);
  if (!written.ok()) return written;
  if (!options.quiet) {
    std::string what = std::to_string(sample_count) + " samples";
    if (!options.samples)
      what = std::to_string(cap.syscalls.size()) + " system calls";
    else if (cap.syscalls.size() > 0)
      what += ", " + std::to_string(cap.syscalls.size()) + " system calls";
    if (cap.off_cpu.size() > 0)
      what += ", " + std::to_string(cap.off_cpu.size()) + " off-CPU intervals";
    fprintf(stderr, "microscope: wrote %s: %s, %zu threads, %zu processes, %llu lost\n",
            options.output.c_str(), what.c_str(), cap.threads.size(), cap.processes.size(),
            static_cast<unsigned long long>(lost));
  }
  if (!launch) return 0;
  if (!exited) {
    while (waitpid(target, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  return ShellStatus(wait_status);
}

void FillRecordingHost(capture::Settings* s) {
  FillHostSettings(s);
}

int ExitStatusForShell(int wait_status) {
  return ShellStatus(wait_status);
}

uint64_t MonotonicNowNs() {
  return MonotonicNow();
}

void CatchStopSignals() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

int StopSignal() {
  return g_stop_signal;
}

}  // namespace microscope::record
