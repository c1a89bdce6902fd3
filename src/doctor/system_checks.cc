#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/capability.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>
#include <optional>
#include <string>

#include "src/doctor/doctor.h"
#include "src/record/record_options.h"
#include "src/record/session.h"

namespace microscope::doctor {

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kWarn:
      return "warn";
    case Verdict::kFail:
      return "fail";
  }
  return "fail";
}

namespace {

std::optional<long long> ReadNumber(const char* path) {
  std::ifstream in(path);
  long long v;
  if (in >> v) return v;
  return std::nullopt;
}

// The effective capabilities of this process (bit N: capability N).
uint64_t EffectiveCaps() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return 0;
  return uint64_t(data[0].effective) | (uint64_t(data[1].effective) << 32);
}

constexpr int kCapIpcLock = 14, kCapSysAdmin = 21, kCapSyslog = 34, kCapPerfmon = 38, kCapBpf = 39;

bool Has(uint64_t caps, int cap) {
  return (caps >> cap) & 1;
}

Check Privileges(bool root, uint64_t caps) {
  Check c{"privileges", Verdict::kPass, "", ""};
  const bool perfmon = Has(caps, kCapPerfmon) || Has(caps, kCapSysAdmin);
  const bool bpf = Has(caps, kCapBpf) || Has(caps, kCapSysAdmin);
  if (root) {
    c.found = "root";
  } else if (perfmon && bpf) {
    c.found = "CAP_PERFMON and CAP_BPF";
  } else {
    c.verdict = Verdict::kWarn;
    c.found = std::string("uid ") + std::to_string(geteuid()) + ", " +
              (perfmon ? "CAP_PERFMON" : "no CAP_PERFMON") + ", " +
              (bpf ? "CAP_BPF" : "no CAP_BPF");
    c.fix =
        "Python and JavaScript frames, off-CPU time and system calls need BPF: run as root, or "
        "give microscope CAP_PERFMON and CAP_BPF (setcap cap_perfmon,cap_bpf+ep "
        "$(command -v microscope)); without them only perf_event samples of your own processes";
  }
  return c;
}

Check Paranoid(bool root, uint64_t caps) {
  Check c{"perf_event_paranoid", Verdict::kPass, "", ""};
  std::optional<long long> v = ReadNumber("/proc/sys/kernel/perf_event_paranoid");
  if (!v) {
    c.verdict = Verdict::kFail;
    c.found = "/proc/sys/kernel/perf_event_paranoid is not there: no perf_event in this kernel";
    c.fix = "a kernel with CONFIG_PERF_EVENTS";
    return c;
  }
  c.found = std::to_string(*v);
  if (root || Has(caps, kCapPerfmon) || Has(caps, kCapSysAdmin)) {
    c.found += " (not limiting: " + std::string(root ? "root" : "CAP_PERFMON") + ")";
    return c;
  }
  if (*v <= 1) {
    c.found += ": your own processes, user and kernel frames";
  } else if (*v == 2) {
    c.verdict = Verdict::kWarn;
    c.found += ": your own processes, user frames only (no kernel frames)";
    c.fix = "for kernel frames: sudo sysctl kernel.perf_event_paranoid=1, or run as root";
  } else {
    c.verdict = Verdict::kFail;
    c.found += ": no perf_event for a user without CAP_PERFMON";
    c.fix =
        "sudo sysctl kernel.perf_event_paranoid=1 (or 2: user frames only), or run as root "
        "or with CAP_PERFMON";
  }
  return c;
}

Check KptrRestrict(bool root, uint64_t caps) {
  Check c{"kptr_restrict", Verdict::kPass, "", ""};
  std::optional<long long> v = ReadNumber("/proc/sys/kernel/kptr_restrict");
  if (!v) {
    c.verdict = Verdict::kWarn;
    c.found = "not readable";
    c.fix = "kernel frames may stay unnamed: check /proc/sys/kernel/kptr_restrict";
    return c;
  }
  c.found = std::to_string(*v);
  const bool syslog = root || Has(caps, kCapSyslog);
  if (*v == 0 || (*v == 1 && syslog)) {
    c.found += ": kernel symbols readable";
  } else {
    c.verdict = Verdict::kWarn;
    c.found += ": /proc/kallsyms shows no addresses to this user: kernel frames stay unnamed";
    c.fix = *v == 1 ? "run as root (or with CAP_SYSLOG), or sudo sysctl kernel.kptr_restrict=0"
                    : "sudo sysctl kernel.kptr_restrict=1 and run as root, or =0";
  }
  return c;
}

std::string Kib(uint64_t bytes) {
  return std::to_string(bytes / 1024) + " KiB";
}

Check LockedMemory(bool root, uint64_t caps) {
  Check c{"locked memory", Verdict::kPass, "", ""};
  record::RecordOptions defaults;
  const uint64_t cpus = uint64_t(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  const uint64_t per_cpu = (uint64_t(record::DefaultRingPages(defaults)) + 1) * 4096;
  const uint64_t need = per_cpu * cpus;
  c.found = "a default recording maps " + Kib(need) + " of rings (" + std::to_string(cpus) +
            " CPUs x " + Kib(per_cpu) + ")";
  if (root || Has(caps, kCapIpcLock)) {
    c.found += "; not limited (" + std::string(root ? "root" : "CAP_IPC_LOCK") + ")";
    return c;
  }
  rlimit lim{};
  getrlimit(RLIMIT_MEMLOCK, &lim);
  const uint64_t rl = lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : uint64_t(lim.rlim_cur);
  const uint64_t mlock_kb = ReadNumber("/proc/sys/kernel/perf_event_mlock_kb").value_or(516);
  // The kernel lets a user lock perf_event_mlock_kb per CPU (as its
  // per-user allowance, scaled by the online CPUs) and takes the rest from
  // RLIMIT_MEMLOCK.
  const uint64_t allowance = mlock_kb * 1024 * cpus;
  const uint64_t can = rl == UINT64_MAX ? UINT64_MAX : allowance + rl;
  c.found += "; this user may lock " + (can == UINT64_MAX ? std::string("any amount") : Kib(can)) +
             " (perf_event_mlock_kb " + std::to_string(mlock_kb) + " per CPU, RLIMIT_MEMLOCK " +
             (rl == UINT64_MAX ? std::string("unlimited") : Kib(rl)) + ")";
  if (can < need) {
    c.verdict = Verdict::kFail;
    c.fix = "raise the limit (ulimit -l " +
            std::to_string((need - std::min(need, allowance)) / 1024 + 1) +
            " in this shell, or memlock in /etc/security/limits.conf), or sudo sysctl "
            "kernel.perf_event_mlock_kb=" +
            std::to_string(per_cpu / 1024 + 4) + ", or record with smaller rings (-m PAGES)";
  }
  return c;
}

Check Btf() {
  Check c{"BTF", Verdict::kPass, "", ""};
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    c.verdict = Verdict::kFail;
    c.found = "/sys/kernel/btf/vmlinux is not there";
    c.fix =
        "a kernel built with CONFIG_DEBUG_INFO_BTF (Debian's are): without it no BPF part "
        "loads (Python and JavaScript frames, off-CPU time, system calls); CPU samples "
        "still work";
    return c;
  }
  c.found = "/sys/kernel/btf/vmlinux";
  return c;
}

// The tracepoints the BPF parts attach to (tp_btf: by their BTF types).
Check Tracepoints() {
  Check c{"tracepoints", Verdict::kPass, "", ""};
  struct btf* btf = btf__load_vmlinux_btf();
  if (btf == nullptr) {
    c.verdict = Verdict::kWarn;
    c.found = "the kernel's BTF could not be read";
    c.fix = "see the BTF check";
    return c;
  }
  const char* needed[] = {"sched_switch",      "sched_waking",       "sys_enter",
                          "sys_exit",          "sched_process_exec", "sched_process_exit",
                          "sched_process_fork"};
  std::string missing;
  for (const char* tp : needed) {
    const std::string type = std::string("btf_trace_") + tp;
    if (btf__find_by_name_kind(btf, type.c_str(), BTF_KIND_TYPEDEF) < 0) {
      missing += (missing.empty() ? "" : ", ") + std::string(tp);
    }
  }
  btf__free(btf);
  if (missing.empty()) {
    c.found = "sched_switch, sched_waking, sys_enter, sys_exit, sched_process_exec/exit/fork";
  } else {
    c.verdict = Verdict::kFail;
    c.found = "not in this kernel: " + missing;
    c.fix =
        "off-CPU time (sched_switch, sched_waking), system calls (sys_enter, sys_exit) and "
        "the walkers (sched_process_*) need these tracepoints: a newer kernel";
  }
  return c;
}

Check Machine() {
  Check c{"CPU", Verdict::kPass, "", ""};
  utsname u{};
  uname(&u);
  c.found = u.machine;
  if (c.found != "x86_64") {
    c.verdict = Verdict::kFail;
    c.fix =
        "microscope records on x86-64 only (its unwinder, system call table and walkers "
        "are x86-64's); captures from x86-64 read anywhere";
  }
  return c;
}

}  // namespace

std::vector<Check> SystemChecks() {
  const bool root = geteuid() == 0;
  const uint64_t caps = EffectiveCaps();
  return {Privileges(root, caps),
          Paranoid(root, caps),
          KptrRestrict(root, caps),
          LockedMemory(root, caps),
          Btf(),
          Tracepoints(),
          Machine()};
}

}  // namespace microscope::doctor
