// `microscope doctor`: will a recording work here, and of this target, and
// what to change first. Each check says pass, warn or fail, what it found,
// and for a miss the next step. System checks read the kernel's settings
// and this process's rights; target checks read the program's files (its
// modules: CFI, debug information, the runtimes it carries) without running
// it, or a running process's mappings.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace microscope::doctor {

enum class Verdict : uint8_t { kPass, kWarn, kFail };
const char* VerdictName(Verdict v);  // "pass", "warn", "fail"

struct Check {
  std::string name;  // "perf_event_paranoid", "module /usr/bin/python3.11", ...
  Verdict verdict = Verdict::kPass;
  std::string found;  // what was found, in a line
  std::string fix;    // the next step for a warn or fail ("" for a pass)
};

struct Target {
  pid_t pid = 0;                     // a running process, or
  std::vector<std::string> command;  // a program and its arguments (not run)
};

// This machine and this user: privileges, perf_event_paranoid,
// kptr_restrict, locked memory against the rings a default recording needs,
// BTF, the tracepoints off-CPU time and system calls attach to, the CPU.
std::vector<Check> SystemChecks();

// The target's modules (for a program: the file, its interpreter and the
// libraries it needs, found as the loader would; for a process: its
// executable mappings, read through its own root) and where it runs (a
// container, another mount namespace). Errors (no such program or process)
// are failed checks.
std::vector<Check> TargetChecks(const Target& target);

}  // namespace microscope::doctor
