// What the recorder reads of running processes from /proc: their threads
// and states, command lines, and executable mappings (to seed an attach as
// perf synthesizes them). Every read tolerates the process going away.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/record/processor.h"

namespace microscope::record {

// The thread ids of `pid`, sorted; empty when it is gone.
std::vector<pid_t> ListTasks(pid_t pid);

// The state letter of /proc/TID/stat (R, S, D, Z, ...); 0 when unreadable.
char ThreadState(pid_t tid);

// True when no thread of `pid` is left running: the leader may have exited
// (a zombie) while other threads go on.
bool ProcessGone(pid_t pid);

// The executable mappings of /proc/PID/maps, in its order; empty when the
// process is gone or its memory already released (it is exiting).
struct ExecutableMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  uint64_t offset = 0;
  std::string path;  // empty for anonymous code
};
std::vector<ExecutableMapping> ExecutableMappings(pid_t pid);

// Whether process `pid` still maps `path` at `start`: mapping records are
// processed after the fact, and a forked child may have exec'd another
// program since. A process whose maps cannot be read (gone) counts as yes.
bool StillMapped(pid_t pid, uint64_t start, std::string_view path);

// /proc/PID/cmdline as arguments.
std::vector<std::string> ReadCommandLine(pid_t pid);
// /proc/PID/comm without its newline; empty when the process is gone.
std::string ReadComm(pid_t pid);

// What the scheduler counted for a thread, as /proc or its exit gives it.
struct SchedCounts {
  uint64_t on_cpu = 0;
  uint64_t run_delay = 0;
  uint64_t timeslices = 0;
  uint64_t voluntary = 0;  // context switches by blocking
};

// /proc/PID/task/TID/schedstat (on CPU, run delay, timeslices; Linux's
// CONFIG_SCHED_INFO) and, with `voluntary`, status's
// voluntary_ctxt_switches; nullopt when the thread is gone.
std::optional<SchedCounts> ReadSchedCounts(pid_t pid, pid_t tid, bool voluntary);

// /proc/sys/kernel/perf_event_max_stack (127 when unreadable).
uint32_t MaxStack();

// Seeds the processor with a running process's threads and executable
// mappings at `time` (before the events start).
void SeedFromProc(pid_t pid, uint64_t time, Processor* processor);

// Adds a running process's executable mappings at `time` (those already
// known are kept as they are); false when the process is gone.
bool AddExecutableMappings(pid_t pid, uint64_t time, Processor* processor);

}  // namespace microscope::record
