"""Attach to a running process: its existing thread and a thread it starts
after the attach are sampled; the recording ends at --duration; the target
keeps running unharmed."""
import os
import signal
import subprocess
import time

from common import *

require_perf()
d = tmpdir()
out = d + "/attach.mscap"
target = subprocess.Popen([fixture("longrun"), "60"], stdout=subprocess.PIPE, text=True)
try:
    check(target.stdout.readline().strip() == "ready", "target started")
    rec = subprocess.Popen([MICROSCOPE, "record", "-q", "-o", out, "--pid", str(target.pid),
                            "--duration", "3s"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_recording(rec)
    os.kill(target.pid, signal.SIGUSR1)  # start the "late" thread while attached
    os.kill(target.pid, signal.SIGUSR2)  # and a child process
    so, se = rec.communicate(timeout=60)
    check(rec.returncode == 0, "record --pid exited 0 (%d: %s)" % (rec.returncode, se))
    time.sleep(0.3)
    check(target.poll() is None, "target still running after the recording")
    with open("/proc/%d/stat" % target.pid) as f:
        state = f.read().rsplit(")", 1)[1].split()[0]
    check(state in ("R", "S"), "target state is %s (running, not stopped or traced)" % state)
    rep = report(out, "--tree", "--min-percent", "0")
    h = rep["header"]
    check(h["mode"] == "attach" and h["target_pid"] == target.pid, "attach mode, target pid")
    check(2.5e9 <= h["duration_ns"] <= 6e9, "duration %.2f s for --duration 3s" % (h["duration_ns"] / 1e9))
    # From the attach until the sampling events were on (while the sources
    # started) the process ran unsampled: a gap of that cause, not idle time.
    gaps = {g["cause"]: g for g in h.get("gaps", [])}
    attaching = gaps.get("not yet attached")
    check(attaching is not None and attaching["gaps"] == 1 and 0 < attaching["ns"] < 30e9,
          "the time before sampling began is a 'not yet attached' gap: %s" % h.get("gaps"))
    threads = {t["name"]: t["samples"] for t in h["threads"]}
    # Sampled, whatever else runs: three threads spin on two cores here, and
    # a loaded machine gave the main thread fewer than 500 of 3000.
    check(threads.get("longrun", 0) > 100, "main thread sampled: %s" % threads)
    check(threads.get("late", 0) > 300, "thread started after attach sampled: %s" % threads)
    check(samples_under_chain(rep, ["main", "spin_main"]) > 500, "main > spin_main")
    check(samples_under_chain(rep, ["start_thread", "late_thread", "spin_late"]) > 300,
          "start_thread > late_thread > spin_late")
    check(h["command"][0].endswith("longrun"), "command line from /proc: %s" % h["command"])
    procs = h["processes"]
    children = [p for p in procs if p["parent_pid"] == target.pid]
    # The child spins 2 s of wall time beside two other spinners: on a
    # loaded 2-core machine it got 212 samples; 50 show it is followed.
    check(len(children) == 1 and children[0]["samples"] > 50,
          "child process started after attach sampled: %s" % procs)
    check(samples_under_chain(rep, ["main", "spin_child"]) > 50, "child's main > spin_child")
    fn = functions(rep)
    check(samples_under_chain(rep, ["spin_main", "burn_units"]) > 0,
          "burn_units shows as inlined into spin_main (DWARF inline chain)")
finally:
    target.kill()
    target.wait()

# Without --duration, the target's exit ends the recording. The target runs
# 3 to 4 s (whole seconds of time(2)): at 2 (1 to 2 s) a sanitized
# recorder's attach on a loaded machine once left it under 0.5 s of samples.
target = subprocess.Popen([fixture("longrun"), "4"], stdout=subprocess.PIPE, text=True)
target.stdout.readline()
t0 = time.time()
p = run([MICROSCOPE, "record", "-q", "-o", out, "--pid", str(target.pid)], timeout=60)
target.wait()
check(p.returncode == 0, "record --pid ended by the target's exit, status 0 (%s)" % p.stderr)
check(time.time() - t0 < 10, "ended %.1f s after attach" % (time.time() - t0))
check(report(out)["header"]["samples"] > 500, "samples until the exit")
