"""`microscope syscalls` against strace -c -f on a fixture that makes known
numbers of read/write/openat/close calls (some failing) in two processes:
the per-call counts and error counts must be equal, and report --syscalls
must show them."""
import re

from common import *

require_perf()
d = tmpdir()
fx = fixture("syscalls")
out = os.path.join(d, "sc.mscap")
p = run([MICROSCOPE, "syscalls", "-q", "-o", out, "--", fx])
check(p.returncode == 0, "syscalls exits with the program's status (%d): %s" % (p.returncode, p.stderr))
rep = report(out, "--syscalls")
ours = {r["syscall"]: (r["calls"], r["errors"]) for r in rep["syscalls"]["rows"]}
check(len(rep["header"]["processes"]) == 2, "both processes are in the capture")

s = run(["strace", "-c", "-f", "-o", os.path.join(d, "strace.txt"), fx])
check(s.returncode == 0, "strace ran the fixture")
theirs = {}
for line in open(os.path.join(d, "strace.txt")):
    parts = line.split()
    if len(parts) >= 5 and re.match(r"^[\d.]+$", parts[0]) and parts[-1] not in ("total",):
        calls = int(parts[3])
        errors = int(parts[4]) if len(parts) == 6 else 0
        theirs[parts[-1]] = (calls, errors)
for call in ("read", "write", "openat", "close"):
    check(call in ours and call in theirs, "%s counted by both" % call)
    check(ours[call] == theirs[call],
          "%s: calls and errors equal strace -c -f: ours %s, strace %s" % (call, ours[call], theirs[call]))
check(ours["read"][0] >= 100 and ours["write"][0] >= 50, "the fixture's own calls are all there")
check(ours["openat"][1] >= 10, "the 10 failing opens are among the openat errors (the loader's searches fail too)")
text = run([MICROSCOPE, "report", "--syscalls", out]).stdout
row = re.search(r"\s(\d+)\s+(\d+)\s+openat\n", text)
check(row is not None and (int(row.group(1)), int(row.group(2))) == ours["openat"],
      "the text table shows openat's calls and errors")
slow = rep["syscalls"]["slowest"]
check(len(slow) > 0 and all(slow[i]["duration_ns"] >= slow[i + 1]["duration_ns"] for i in range(len(slow) - 1)),
      "slowest calls, longest first")

# Without privileges: one clear line saying what is needed, no capture.
nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
denied = os.path.join(d, "denied.mscap")
os.chmod(d, 0o777)
p = run(nobody + [MICROSCOPE, "syscalls", "-q", "-o", denied, "--", "/bin/true"])
line = p.stderr.strip()
check(p.returncode == 1 and len(line.splitlines()) == 1 and "CAP_BPF" in line,
      "unprivileged: one error line naming what is needed (%d: %s)" % (p.returncode, line))
check(not os.path.exists(denied), "and no capture is written")

# record --syscalls: samples and system calls in one capture; calls of at
# least --syscall-stack-min carry the caller's stack (the sleeper's 8 ms
# nanosleeps: innermost frames libc's nanosleep, called from sleep_phase).
out = os.path.join(d, "merged.mscap")
p = run([MICROSCOPE, "record", "-q", "--syscalls", "--syscall-stack-min", "5ms", "-o", out, "--",
         fixture("offcpu"), "sleep", "20"])
check(p.returncode == 0, "record --syscalls ran: %s" % p.stderr)
rep = report(out, "--syscalls")
check(rep["header"]["samples"] > 0 and any(r["syscall"] == "clock_nanosleep" for r in rep["syscalls"]["rows"]),
      "the capture has the samples and the system call table")
slow = [s for s in rep["syscalls"]["slowest"] if s["syscall"] == "clock_nanosleep" and s["duration_ns"] >= 5e6]
check(len(slow) >= 10, "the slow nanosleeps are among the slowest calls: %d" % len(slow))
for s in slow:
    st = s.get("stack") or []
    i = st.index("sleep_phase") if "sleep_phase" in st else 0
    check(i >= 1 and all("sleep" in f for f in st[:i]) and st[i + 1:] == ["sleeper", "start_thread", "clone3"],
          "a slow nanosleep's stack starts in libc's nanosleep called from sleep_phase: %s" % st)
fast = [s for s in rep["syscalls"]["slowest"] if s["duration_ns"] < 5e6]
check(all(not s.get("stack") for s in fast), "calls shorter than the threshold carry no stack")
# microscope syscalls (no samples: a dummy perf event brings the mappings)
# gives slow calls the same stacks.
only = os.path.join(d, "only.mscap")
p = run([MICROSCOPE, "syscalls", "-q", "--syscall-stack-min", "5ms", "-o", only, "--",
         fixture("offcpu"), "pipe", "10"])
check(p.returncode == 0, "syscalls --syscall-stack-min ran: %s" % p.stderr)
rep = report(only, "--syscalls")
check(rep["header"]["samples"] == 0, "a syscall-only recording has no samples")
slow = [s for s in rep["syscalls"]["slowest"] if s["syscall"] == "read" and s["duration_ns"] >= 5e6]
check(len(slow) >= 5 and all("pipe_reader_read" in (s.get("stack") or []) for s in slow),
      "its slow reads carry pipe_reader_read's stack: %s" % (slow[0].get("stack") if slow else None))
p = run([MICROSCOPE, "record", "-q", "--syscall-stack-min", "5ms", "-o", out, "--", fixture("offcpu"), "pipe", "1"])
check(p.returncode == 2 and "--syscalls" in p.stderr, "--syscall-stack-min without --syscalls is refused")
