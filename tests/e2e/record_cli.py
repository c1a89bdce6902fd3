"""record's command-line contract: errors, Ctrl-C, --duration in launch
mode, a killed recorder leaves no file, -q is quiet, privileges."""
import os
import re
import signal
import subprocess
import time

from common import *

require_perf()
d = tmpdir()

# A program that cannot run: one error line, no capture.
p = run([MICROSCOPE, "record", "-o", d + "/none.mscap", "--", d + "/no-such-program"])
check(p.returncode != 0, "missing program: non-zero exit (%d)" % p.returncode)
check(p.stderr.startswith("microscope: error: cannot run"), "missing program: %r" % p.stderr)
check(not os.path.exists(d + "/none.mscap"), "missing program: no capture")

# Neither a program nor --pid.
p = run([MICROSCOPE, "record"])
check(p.returncode == 2 and "give a program" in p.stderr, "usage error: %r" % p.stderr)

# -q prints nothing; without it, one summary line.
p = run([MICROSCOPE, "record", "-q", "-o", d + "/q.mscap", "--", fixture("split"), "5"])
check(p.returncode == 0 and p.stderr == "", "-q is quiet: %r" % p.stderr)
p = run([MICROSCOPE, "record", "-o", d + "/v.mscap", "--", fixture("split"), "5"])
check("microscope: wrote " + d + "/v.mscap" in p.stderr, "summary line: %r" % p.stderr)

# The program gets the signal mask and ignored SIGCHLD the recorder was
# started with (the recorder itself hears its child by default).
def child_signals(block, ignore):
    def prepare():
        if ignore:
            signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_BLOCK, block)
    p = subprocess.run([MICROSCOPE, "record", "-q", "-o", d + "/sig.mscap", "--", "grep", "-E",
                        "^Sig(Blk|Ign)", "/proc/self/status"], capture_output=True, text=True,
                       preexec_fn=prepare)
    return p.returncode, {k: int(v, 16) for k, v in re.findall(r"(Sig\w+):\s+([0-9a-f]+)", p.stdout)}
rc, sig = child_signals({signal.SIGCHLD, signal.SIGUSR2}, True)
bit = lambda s: 1 << (s - 1)
check(rc == 0 and sig.get("SigBlk", 0) & bit(signal.SIGCHLD) and sig.get("SigBlk", 0) & bit(signal.SIGUSR2)
      and sig.get("SigIgn", 0) & bit(signal.SIGCHLD),
      "the program's inherited mask and ignored SIGCHLD kept: rc %d, %s" % (rc, sig))
rc, sig = child_signals(set(), False)
check(rc == 0 and sig.get("SigBlk") == 0 and not sig.get("SigIgn", 0) & bit(signal.SIGCHLD),
      "nothing blocked given, nothing blocked: rc %d, %s" % (rc, sig))

# --version names the release.
p = run([MICROSCOPE, "--version"])
check(p.returncode == 0 and re.fullmatch(r"microscope \d+\.\d+\.\d+\n", p.stdout) is not None,
      "--version: %r" % p.stdout)

# One duration grammar on every option (ns to h), and one error for what is not one.
p = run([MICROSCOPE, "record", "-q", "-o", d + "/ns.mscap", "--off-cpu-min", "500ns", "--duration", "1h",
         "--", fixture("split"), "5"])
check(p.returncode == 0, "--off-cpu-min 500ns --duration 1h accepted: %r" % p.stderr)
p = run([MICROSCOPE, "record", "-q", "--duration", "5parsecs", "--", fixture("split"), "5"])
check(p.returncode == 2 and "--duration: '5parsecs' is not a duration" in p.stderr,
      "a bad duration names the option and the value: %r" % p.stderr)
for bad in ("0", "-5", "abc", "99999999999"):
    for args in (["record", "--pid", bad], ["snapshot", bad], ["syscalls", "--pid", bad],
                 ["report", d + "/ns.mscap", "--pid", bad]):
        p = run([MICROSCOPE, *args])
        line = p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""
        check(p.returncode not in (0, 1) and "'%s' is not a process id" % bad in line and "range" not in p.stderr,
              "%s: one line naming the pid: %r" % (" ".join(args), p.stderr))

# On a terminal, a live status line (elapsed, samples, lost) on stderr; none with -q.
# `script` gives the recorder a pseudo-terminal.
def on_tty(extra):
    cmd = " ".join([MICROSCOPE, "record", *extra, "-o", d + "/tty.mscap", "--", fixture("split"), "600"])
    return run(["script", "-qec", cmd, "/dev/null"]).stdout
shown = on_tty([])
check("microscope: recording" in shown and "samples" in shown and "lost" in shown,
      "status line on a terminal: %r" % shown[-160:])
check("microscope: recording" not in on_tty(["-q"]), "-q: no status line on a terminal")

# --duration in launch mode ends the program (SIGTERM) after writing.
t0 = time.time()
p = run([MICROSCOPE, "record", "-q", "-o", d + "/dur.mscap", "--duration", "1s", "--",
         fixture("longrun"), "60"])
check(p.returncode == 128 + signal.SIGTERM, "--duration: the program's status 143 (%d)" % p.returncode)
check(time.time() - t0 < 20, "--duration: ended in %.1f s" % (time.time() - t0))
h = report(d + "/dur.mscap")["header"]
check(0.9e9 <= h["duration_ns"] <= 5e9, "--duration 1s: recorded %.2f s" % (h["duration_ns"] / 1e9))

# Ctrl-C: the terminal sends SIGINT to the whole foreground group.
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "-o", d + "/int.mscap", "--", fixture("longrun"), "60"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
# A second after the program says it runs (it runs once sampling is on).
check(read_line(rec.stdout, "ready", 60), "Ctrl-C: the program started")
time.sleep(1.0)
os.killpg(rec.pid, signal.SIGINT)
so, se = rec.communicate(timeout=60)
check(rec.returncode == 128 + signal.SIGINT, "Ctrl-C: the program's status 130 (%d, %s)" % (rec.returncode, se))
rep = report(d + "/int.mscap")
check(rep["header"]["samples"] > 300, "Ctrl-C: capture written with %d samples" % rep["header"]["samples"])

# A recorder killed outright leaves nothing under the final name.
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "-o", d + "/killed.mscap", "--", fixture("longrun"), "60"],
                       stdout=subprocess.DEVNULL, start_new_session=True)
time.sleep(1.0)
os.kill(rec.pid, signal.SIGKILL)
rec.wait()
os.killpg(rec.pid, signal.SIGKILL)  # the orphaned program
check(not os.path.exists(d + "/killed.mscap"), "SIGKILLed recorder: no file under the final name")

# Without privileges. As 'nobody' (paranoid 2): another user's process is refused
# with one line that names the setting; its own program is recorded without
# kernel frames, and the capture says why.
nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
os.chmod(d, 0o777)
p = run(nobody + [MICROSCOPE, "record", "-q", "-o", d + "/denied.mscap", "--pid", "1", "--duration", "1s"])
line = p.stderr.strip()
check(p.returncode == 1 and len(line.splitlines()) == 1, "unprivileged attach: one error line (%d)" % p.returncode)
check("perf_event_paranoid" in line and "CAP_PERFMON" in line, "names perf_event_paranoid and CAP_PERFMON: %r" % line)
paranoid = int(open("/proc/sys/kernel/perf_event_paranoid").read())
if paranoid <= 2:
    p = run(nobody + [MICROSCOPE, "record", "-q", "-o", d + "/user.mscap", "--", fixture("split"), "100"])
    check(p.returncode == 0, "unprivileged launch records (%d: %s)" % (p.returncode, p.stderr))
    h = report(d + "/user.mscap")["header"]
    check(not h["kernel_frames"] and h["samples"] > 50, "user-only recording, %d samples" % h["samples"])
    check(any("perf_event_paranoid" in n for n in h["notes"]), "capture notes why kernel frames are off")


# --level: the depth of a recording for its cost.
def q(path, sql):
    p = run([MICROSCOPE, "query", "--format", "json", path, sql])
    check(p.returncode == 0, "query %s: %s" % (sql, p.stderr))
    return json.loads(p.stdout)


# 0: samples counted by thread without stacks (events on every task of each
# CPU, the target's processes followed by their records), off-CPU time
# totalled by thread from the scheduler's counts (blocked, runnable). The
# sleep fixture: 100 rounds of 2 ms on CPU and 8 ms asleep, in a thread
# that exits (its totals come from its exit).
lv = d + "/level0.mscap"
p = run([MICROSCOPE, "record", "-q", "--level", "0", "-o", lv, "--", fixture("offcpu"), "sleep", "100"])
check(p.returncode == 0, "--level 0 records (%d): %s" % (p.returncode, p.stderr))
cap = q(lv, "SELECT call_graph, frequency, stack_copy FROM captures")[0]
check(cap["call_graph"] == "none" and cap["stack_copy"] == 0, "--level 0: no stacks (%s)" % cap)
# 99 Hz by each CPU's clock, its period varied at random: the sleeper's 2 ms
# of every 10 ms, some 0.2 s of CPU, gets its share (about 20 samples; at a
# fixed 10.1 ms period it was sampled in step with its sleeps, 0 or 1 times).
s = q(lv, """SELECT count(*) AS n, count(stack) AS with_stack, sum(weight) AS ns FROM samples s
             JOIN threads t ON t.id = s.thread WHERE t.name = 'sleeper'""")[0]
check(s["n"] >= 8 and s["with_stack"] == 0 and 0.08e9 <= s["ns"] <= 0.5e9,
      "--level 0: the sleeper's %d samples (%s ns of CPU, about 0.2 s due), %d with a stack" %
      (s["n"], s["ns"], s["with_stack"]))
h = report(lv)["header"]
check(len(h["processes"]) == 1 and {t["name"] for t in h["threads"]} <= {"offcpu", "sleeper"} and
      any("every task of each CPU" in n for n in h["notes"]),
      "--level 0: events on every CPU, the fixture's process alone recorded (%s, %s)" %
      ([p["command"] for p in h["processes"]], sorted({t["name"] for t in h["threads"]})))


def blocked(path, thread):
    return q(path, """SELECT sum(total) AS ns, sum(count) AS n FROM off_cpu_short o
                      JOIN threads t ON t.id = o.thread WHERE t.name = '%s' AND o.state = 'blocked'""" %
             thread)[0]


slept = blocked(lv, "sleeper")
check(slept["n"] is not None and slept["n"] >= 100 and 0.6e9 <= slept["ns"] <= 3e9,
      "--level 0: the sleeper blocked %s times for %s ns in all (100 of 8 ms)" % (slept["n"], slept["ns"]))
kept = q(lv, "SELECT count(*) AS n FROM off_cpu o JOIN threads t ON t.id = o.thread WHERE t.name = 'sleeper'")[0]
check(kept["n"] == 0, "--level 0: no interval kept with stacks (%d)" % kept["n"])
offcpu = {f["function"]: f["self"]["value"] for f in report(lv, "--metric", "offcpu", "--by-state")["functions"]}
check(offcpu.get("[blocked]", 0) >= 0.6e9,
      "--level 0 --metric offcpu --by-state: the blocked totals end in [blocked] (%s)" % offcpu)
src = {r["name"]: r for r in q(lv, "SELECT name, state FROM sources")}
check(src.get("off-cpu", {}).get("state") == "totals", "--level 0: off-CPU totals only (%s)" % src.get("off-cpu"))
# Attached to a thread asleep since long before: only the time recorded
# counts (its counts at the attach are the base), read at the end from
# /proc while it still sleeps. 300 rounds: 3 s; attached after 1 s for 1 s.
sleeper = subprocess.Popen([fixture("offcpu"), "sleep", "300"], stdout=subprocess.DEVNULL)
try:
    time.sleep(1.0)
    lv = d + "/level0-attach.mscap"
    p = run([MICROSCOPE, "record", "-q", "--level", "0", "--duration", "1s", "-o", lv, "--pid", str(sleeper.pid)])
    check(p.returncode == 0, "--level 0 --pid records (%d): %s" % (p.returncode, p.stderr))
    slept = blocked(lv, "sleeper")
    check(slept["ns"] is not None and 0.4e9 <= slept["ns"] <= 1.3e9 and slept["n"] >= 40,
          "--level 0 --pid: the sleeper blocked %s times for %s ns of the 1 s recorded (not since its "
          "start, 1 s before)" % (slept["n"], slept["ns"]))
finally:
    sleeper.kill()
    sleeper.wait()
# A child the program forks is followed (its samples), another program is not.
lv = d + "/level0-fork.mscap"
p = run([MICROSCOPE, "record", "-q", "--level", "0", "-o", lv, "--", fixture("forkexec"), fixture("split"), "300"])
procs = report(lv)["header"]["processes"]
check(p.returncode == 0 and sorted(p["command"] for p in procs) == ["forkexec", "split"] and
      all(p["samples"] >= 10 for p in procs),
      "--level 0: the program and the child it forked, both sampled (%s)" %
      [(p["command"], p["samples"]) for p in procs])
walkers = q(lv, "SELECT name, state FROM sources WHERE name IN ('python', 'node')")
check(all(w["state"] != "on" for w in walkers), "--level 0: no runtime walks (%s)" % walkers)
# 1 to 3 are the presets; 3 adds system calls with stacks past 1 ms, and off-CPU.
lv = d + "/level3.mscap"
p = run([MICROSCOPE, "record", "-q", "--level", "3", "-o", lv, "--", fixture("split"), "20"])
check(p.returncode == 0, "--level 3 records (%d): %s" % (p.returncode, p.stderr))
cap = q(lv, "SELECT frequency, stack_copy FROM captures")[0]
src = {r["name"] + "." + str(r["key"]): r for r in q(lv, "SELECT * FROM sources")}
check(cap["frequency"] == 3999 and src["syscalls.stack_min_ns"]["value"] == 1000000 and
      src["syscalls.stack_min_ns"]["state"] == "on" and src["off-cpu.min_ns"]["state"] == "on",
      "--level 3: the deep preset, system calls with stacks past 1 ms, off-CPU (%s, %s)" %
      (cap, sorted(src)))
lv = d + "/level1.mscap"
p = run([MICROSCOPE, "record", "-q", "--level", "1", "-F", "250", "-o", lv, "--", fixture("split"), "5"])
cap = q(lv, "SELECT frequency, stack_copy FROM captures")[0]
check(p.returncode == 0 and cap["frequency"] == 250 and cap["stack_copy"] == 8192,
      "--level 1: the quick preset, -F given beside it kept (%s)" % cap)
p = run([MICROSCOPE, "record", "--level", "2", "--preset", "deep", "--", fixture("split"), "5"])
check(p.returncode == 2 and "--level or --preset" in p.stderr, "--level with --preset: %r" % p.stderr)
