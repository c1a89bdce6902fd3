"""microscope doctor: every check on this machine (root: all pass), then
each check made to fail and its message naming the fix: perf_event_paranoid
raised for a user without CAP_PERFMON, a locked-memory limit lowered below
the rings a default recording maps, a program without CFI and stripped of
its symbols, and a CPython release the walker refuses (3.9, from Debian
bullseye's packages); a running process's checks, and JSON when piped."""
import json
import re
import subprocess

from common import *

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def doctor(*args, prefix=(), expect_rc=None):
    p = run([*prefix, MICROSCOPE, "doctor", *args])
    if expect_rc is not None and p.returncode != expect_rc:
        fail("doctor %s exited %d (want %d): %s" % (args, p.returncode, expect_rc, p.stderr))
    try:
        out = json.loads(p.stdout)
    except ValueError:
        fail("doctor %s: not JSON when piped: %r" % (args, p.stdout[:300]))
    check(out["schema"] == "microscope.doctor/1", "a versioned schema")
    return p.returncode, out


def by_name(out):
    return {c["check"]: c for c in out["checks"]}


# --- This machine, as root: the system's checks pass.
rc, out = doctor(expect_rc=0)
checks = by_name(out)
for name in ("privileges", "perf_event_paranoid", "kptr_restrict", "locked memory", "BTF",
             "tracepoints", "CPU"):
    check(name in checks and checks[name]["verdict"] == "pass",
          "%s passes as root here: %s" % (name, checks.get(name)))
check(out["summary"]["fail"] == 0, "nothing fails: %s" % out["summary"])
p = run([MICROSCOPE, "doctor", "--human"])
check(p.stdout.rstrip().endswith("0 failed") and "pass  BTF" in p.stdout,
      "--human: a line per check and the totals: %r" % p.stdout[-200:])

# --- perf_event_paranoid raised, for a user without CAP_PERFMON.
with open("/proc/sys/kernel/perf_event_paranoid") as f:
    paranoid = f.read().strip()
try:
    with open("/proc/sys/kernel/perf_event_paranoid", "w") as f:
        f.write("3")
    rc, out = doctor(prefix=NOBODY, expect_rc=1)
    c = by_name(out)["perf_event_paranoid"]
    check(c["verdict"] == "fail" and "kernel.perf_event_paranoid=1" in c.get("fix", ""),
          "paranoid 3 fails for nobody and names the sysctl: %s" % c)
    c = by_name(out)["privileges"]
    check(c["verdict"] == "warn" and "CAP_BPF" in c.get("fix", ""),
          "without root or CAP_BPF the BPF parts are named: %s" % c)
    rc, out = doctor(expect_rc=0)
    check(by_name(out)["perf_event_paranoid"]["verdict"] == "pass", "root is not held by paranoid 3")
finally:
    with open("/proc/sys/kernel/perf_event_paranoid", "w") as f:
        f.write(paranoid)
rc, out = doctor(prefix=NOBODY)
c = by_name(out)["perf_event_paranoid"]
check(c["verdict"] != "fail", "paranoid %s again: nobody may record its own processes: %s" % (paranoid, c))

# --- A locked-memory limit lowered, for that user.
rc, out = doctor(prefix=["prlimit", "--memlock=65536:65536", *NOBODY], expect_rc=1)
c = by_name(out)["locked memory"]
check(c["verdict"] == "fail" and "ulimit -l" in c.get("fix", "") and "perf_event_mlock_kb" in c["fix"],
      "a 64 KiB memlock limit fails and names ulimit -l and perf_event_mlock_kb: %s" % c)
# The fix it names, applied: perf_event_mlock_kb raised to the figure given.
sysctl = re.search(r"kernel.perf_event_mlock_kb=(\d+)", c["fix"]).group(1)
with open("/proc/sys/kernel/perf_event_mlock_kb") as f:
    mlock_kb = f.read().strip()
try:
    with open("/proc/sys/kernel/perf_event_mlock_kb", "w") as f:
        f.write(sysctl)
    rc, out = doctor(prefix=["prlimit", "--memlock=65536:65536", *NOBODY])
    check(by_name(out)["locked memory"]["verdict"] == "pass",
          "with perf_event_mlock_kb=%s, as the fix said, it passes: %s" % (sysctl, by_name(out)["locked memory"]))
finally:
    with open("/proc/sys/kernel/perf_event_mlock_kb", "w") as f:
        f.write(mlock_kb)

# --- A program without CFI, stripped.
nocfi = fixture("nocfi")
rc, out = doctor("--", nocfi, "1")
c = by_name(out).get("module " + nocfi)
check(c is not None and c["verdict"] == "warn", "the program's module is checked: %s" % c)
check(c["found"].startswith("no CFI") and "-fasynchronous-unwind-tables" in c.get("fix", "")
      and "-fno-omit-frame-pointer" in c["fix"], "no CFI, and the flags that would give it: %s" % c)
check("no symbol table" in c["found"] and "-dbgsym" in c["fix"],
      "stripped, and where names would come from: %s" % c)
libc = [n for n in by_name(out) if n.startswith("module ") and "libc.so" in n]
check(libc and by_name(out)[libc[0]]["found"].startswith("CFI"), "its libc is found as the loader would, with CFI: %s" % libc)
rc, out = doctor("--", fixture("split"), "1")
c = by_name(out)["module " + fixture("split")]
check(c["verdict"] == "pass" and c["found"].startswith("CFI"), "a fixture built with CFI passes: %s" % c)

# --- A CPython release the walker refuses, and ones it reads.
py = fetch_runtimes("fetch-python", ("3.9",))["3.9"]
rc, out = doctor("--", py, "-c", "pass", expect_rc=1)
c = by_name(out).get("python " + py)
check(c is not None and c["verdict"] == "fail" and "before 3.11" in c["found"]
      and "3.11, 3.12, 3.13" in c["found"] and "run a release the walker reads" in c.get("fix", ""),
      "CPython 3.9 is refused by name, with the releases read: %s" % c)
rc, out = doctor("--", "/usr/bin/python3", "-c", "pass", expect_rc=0)
c = [x for n, x in by_name(out).items() if n.startswith("python ")]
check(c and c[0]["verdict"] == "pass" and c[0]["found"].startswith("CPython 3.11"),
      "Debian's CPython 3.11 is walked: %s" % c)
script = os.path.join(tmpdir(), "tool")
with open(script, "w") as f:
    f.write("#!/usr/bin/env python3\nprint(1)\n")
os.chmod(script, 0o755)
rc, out = doctor("--", script)
check(any(n.startswith("python ") for n in by_name(out)), "a Python script: its interpreter is checked")

# --- A running process: its mappings, its namespace.
t = subprocess.Popen([fixture("longrun"), "30"], stdout=subprocess.PIPE, text=True)
try:
    check(t.stdout.readline().strip() == "ready", "longrun started")
    rc, out = doctor("--pid", str(t.pid))
    checks = by_name(out)
    check(checks["mount namespace"]["verdict"] == "pass" and "same" in checks["mount namespace"]["found"],
          "the process is in our mount namespace: %s" % checks["mount namespace"])
    check("module " + os.path.realpath(fixture("longrun")) in checks or
          "module " + fixture("longrun") in checks, "its executable is a checked module")
finally:
    t.kill()
    t.wait()
rc, out = doctor("--pid", "4194304", expect_rc=1)
check(by_name(out)["target"]["verdict"] == "fail", "a pid that runs nothing fails the target check")
rc, out = doctor("--", "no-such-program-here", expect_rc=1)
check("no such program" in by_name(out)["target"]["found"], "a program that is not there is named")
print("doctor: all checks passed")
