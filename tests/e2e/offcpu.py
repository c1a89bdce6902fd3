"""record --off-cpu on fixtures whose blocked time is known by design: a
thread that sleeps 80% of the time in nanosleep, two threads contending on
a mutex, a pipe reader woken by a slow writer, a ping-pong whose intervals
are all shorter than --off-cpu-min; an attach (intervals cut at the start)
and a --duration stop (cut at the end); and libbpf-tools' offcputime on the
same sleeping fixture: blocked time in the nanosleep stack within 5%."""
import json
import signal
import time

from common import *

require_perf()
d = tmpdir()
fx = fixture("offcpu")
CAPTURE_OFFCPU = os.environ["CAPTURE_OFFCPU"]


def rows(path):
    p = run([CAPTURE_OFFCPU, path])
    check(p.returncode == 0, "capture_offcpu reads %s: %s" % (os.path.basename(path), p.stderr))
    out = [json.loads(l) for l in p.stdout.splitlines()]
    settings = out[0]
    check(settings["off_cpu"] == "on", "off-CPU was recorded (settings: %r)" % settings["off_cpu"])
    return settings, [r for r in out if r["kind"] == "interval"], [r for r in out if r["kind"] == "short"]


def total(intervals):
    return sum(r["end"] - r["start"] for r in intervals)


# 1. Sleep 80%: 40 rounds of 2 ms CPU then 8 ms nanosleep.
out = os.path.join(d, "sleep.mscap")
record(out, [fx, "sleep", "40"], ["--off-cpu"])
settings, iv, shorts = rows(out)
sleeper = [r for r in iv if r["thread"] == "sleeper"]
sleeping = [r for r in sleeper if r["state"] == "sleeping"]
check(40 <= len(sleeping) <= 42, "one sleeping interval per nanosleep (40): %d" % len(sleeping))
slept = total(sleeping)
check(0.95 * 0.32e9 <= slept <= 1.6 * 0.32e9, "sleeping time about 40 x 8 ms: %.1f ms" % (slept / 1e6))
rep = report(out)
cpu_ns = sum(t["samples"] for t in rep["header"]["threads"] if t["name"] == "sleeper") * 1e9 / 999
share = slept / (slept + cpu_ns)
check(0.6 <= share <= 0.92, "the sleeper is off CPU, sleeping, about 80%% of its time: %.2f" % share)
in_sleep = [r for r in sleeping if "sleep_phase" in r["stack"]]
check(total(in_sleep) >= 0.95 * slept, "the sleeping time is in sleep_phase's stack (%d of %d intervals)"
      % (len(in_sleep), len(sleeping)))
# A switch-in this kernel did not trace (it traces nothing while some tasks,
# such as a VM's agent, are current) is found at the system call's exit: the
# interval is marked (flag 2) and keeps its user stack, not its kernel part.
unseen = [r for r in sleeping if r["flags"] & 2]
check(all("sleep_phase" in r["stack"] and 8e6 <= r["end"] - r["start"] <= 2.5 * 8e6
          for r in unseen),
      "sleeps whose switch-in was not traced (%d) end at their call's exit, with its user stack"
      % len(unseen))
s = [r for r in in_sleep if not r["flags"] & 2][0]["stack"]
check(any("nanosleep" in f for f in s[:s.index("sleep_phase")]),
      "sleep_phase is the caller of nanosleep: %s" % s)
check(any(f in ("hrtimer_nanosleep", "do_nanosleep", "common_nsleep") for f in s),
      "the kernel part of the stack is there: %s" % s)
check(all(r["start"] >= settings["start"] and r["end"] <= settings["end"] for r in iv),
      "every interval lies within the recording")
js = json.loads(run([MICROSCOPE, "report", "--metric", "offcpu", "--by-state", "--json", out]).stdout)
want = total(r for r in iv if r["state"] == "sleeping") + sum(
    r["total"] for r in shorts if r["state"] == "sleeping")
check(js["by_state"]["states"]["sleeping"]["total_ns"] == want,
      "report --metric offcpu --by-state: sleeping time as recorded (%d ns)" % want)
text = run([MICROSCOPE, "report", "--metric", "offcpu", "--tree", out]).stdout
check("sleep_phase" in text and "metric      offcpu" in text, "the off-CPU tree shows sleep_phase")
PPROF = os.environ.get("PPROF")
if PPROF and os.path.exists(PPROF):
    pb = os.path.join(d, "sleep.pb.gz")
    p = run([MICROSCOPE, "convert", out, "--to", "pprof", "-o", pb])
    check(p.returncode == 0, "convert to pprof: %s" % p.stderr)
    top = run([PPROF, "-top", "-sample_index=off_cpu", "-nodecount=100000", "-nodefraction=0", pb]).stdout
    check("sleep_phase" in top, "pprof -sample_index=off_cpu lists sleep_phase")

# 2. Two threads contending on a mutex, each holding it for 1 ms, 100 times.
out = os.path.join(d, "mutex.mscap")
record(out, [fx, "mutex", "100"], ["--off-cpu"])
settings, iv, shorts = rows(out)
blocked = [r for r in iv if r["thread"] == "contender" and "contend_lock" in r["stack"]
           and r["state"] == "sleeping"]
span = settings["end"] - settings["start"]
check(total(blocked) >= 0.25 * span, "the contenders wait on the lock: %.0f ms of %.0f ms"
      % (total(blocked) / 1e6, span / 1e6))
s = blocked[0]["stack"]
lock = [i for i, f in enumerate(s) if "mutex_lock" in f or "lll_lock_wait" in f]
check(lock and s.index("contend_lock") == max(lock) + 1,
      "contend_lock is the caller of pthread_mutex_lock: %s" % s)
wakers = [r for r in blocked if r["waker"] == "contender" and r["waker_tid"] != 0]
check(len(wakers) >= 0.8 * len(blocked), "the other contender wakes the waiter (%d of %d)"
      % (len(wakers), len(blocked)))

# 3. A pipe reader woken by a slow writer, 20 times.
out = os.path.join(d, "pipe.mscap")
record(out, [fx, "pipe", "20"], ["--off-cpu"])
settings, iv, shorts = rows(out)
reader = [r for r in iv if r["thread"] == "pipe-reader" and r["state"] == "sleeping"]
woken = [r for r in reader if r["waker"] == "slow-writer"]
check(len(woken) >= 19, "the slow writer woke the pipe reader: %d of %d intervals"
      % (len(woken), len(reader)))
writer_tids = {r["tid"] for r in iv if r["thread"] == "slow-writer"}
check({r["waker_tid"] for r in woken} <= writer_tids and writer_tids,
      "the waker's tid is the writer's: %s" % writer_tids)
s = woken[0]["stack"]
i = s.index("pipe_reader_read") if "pipe_reader_read" in s else 0
check(i >= 2 and "read" in s[i - 1] and s[i + 1:] == ["pipe_reader", "start_thread", "clone3"],
      "the reader blocks in libc's read() called from pipe_reader_read: %s" % s)
check(any(f in ("vfs_read", "ksys_read", "pipe_read") for f in s[:i]),
      "the kernel part of the reader's stack is there: %s" % s)

# 4. Ping-pong: every hop is shorter than 50 ms, so with --off-cpu-min 50ms
# the intervals are only counted.
out = os.path.join(d, "pingpong.mscap")
record(out, [fx, "pingpong", "2000"], ["--off-cpu", "--off-cpu-min", "50ms"])
settings, iv, shorts = rows(out)
check(settings["off_cpu_min"] == 50000000, "the threshold is stored")
counted = sum(r["count"] for r in shorts)
check(counted >= 3000, "the short intervals are counted (%d for 2 x 2000 hops)" % counted)
check(all(r["end"] - r["start"] >= 50000000 for r in iv if r["flags"] & 3 == 0),
      "no interval shorter than the threshold carries a stack")

# 4b. More CPU-bound threads than CPUs: they preempt each other. A
# preempted thread's interval carries its registers and, when the thread
# that took its CPU shares its address space, its user stack.
out = os.path.join(d, "crowd.mscap")
record(out, [fx, "crowd", str(2 * os.cpu_count() + 1)], ["--off-cpu", "--off-cpu-min", "100us"])
settings, iv, shorts = rows(out)
pre = [r for r in iv if r["thread"] == "crowd" and r["state"] == "preempted"]
check(len(pre) >= 5, "the crowd's threads are preempted: %d intervals" % len(pre))
# Whether the task that ran before a switch-in shares the address space
# depends on what else runs: 74% of the crowd's intervals had the user stack
# on an idle machine, 61% with two CPU burners, 48% with the burners and a
# sanitized recorder. Each interval either has it, whole down to
# crowd_work, or says it has none (flag 4); a quarter at least have it. A
# thread preempted before it reached crowd_work (in a page fault of its
# start, under clone3) has its whole stack, complete, without it.
with_user = [r for r in pre if "crowd_work" in r["stack"]]
cut = [r for r in pre if r not in with_user and not r["flags"] & 4 and
       not (r["stack_end"] == "complete" and r["stack"] and r["stack"][-1] == "clone3")]
check(not cut, "every preempted interval has its user stack down to crowd_work (or whole, before "
      "it) or says it has none: %d do neither (%s)" % (len(cut), cut[0] if cut else ""))
check(len(with_user) >= 0.25 * len(pre), "preempted intervals have the user stack: %d of %d (%s)"
      % (len(with_user), len(pre), with_user[0]["stack"] if with_user else pre[0]["stack"]))
s = with_user[0]["stack"]
check(s[s.index("crowd_work") + 1:] == ["crowd", "start_thread", "clone3"],
      "a preempted crowd thread was in crowd_work, called from crowd: %s" % s)

# 5. Attach: the process is asleep when the recording starts (cut at start:
# the shell waits on a FIFO), then execs the sleeper; the recording is
# stopped while the main thread still waits in pthread_join (cut at end),
# once the sleeper has burnt 0.2 s of CPU in its 2 ms rounds (some 100
# rounds, each with a sleep), however loaded the machine.
go5 = os.path.join(d, "go5")
os.mkfifo(go5)
proc = subprocess.Popen(["sh", "-c", "read x < %s; exec %s sleep %d" % (go5, fx, 4000)])
out = os.path.join(d, "attach.mscap")
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "--off-cpu", "--pid", str(proc.pid), "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wait_recording(rec)
with open(go5, "w") as f:
    f.write("go\n")
TICK = os.sysconf("SC_CLK_TCK")
deadline = time.time() + 120
while time.time() < deadline:
    with open("/proc/%d/stat" % proc.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    if (int(fields[11]) + int(fields[12])) / TICK >= 0.2:
        break
    time.sleep(0.05)
rec.send_signal(signal.SIGINT)
so, se = rec.communicate(timeout=120)
proc.kill()
proc.wait()
check(rec.returncode == 0, "record --pid ran, stopped by SIGINT: %s" % se)
settings, iv, shorts = rows(out)
cut_start = [r for r in iv if r["flags"] & 1]
check(cut_start and all(r["start"] == settings["start"] for r in cut_start),
      "an interval begun before the recording starts at the recording's start, marked cut")
cut_end = [r for r in iv if r["flags"] & 2]
check(any(r["tid"] == proc.pid and r["end"] == settings["end"] for r in cut_end),
      "the main thread, still in pthread_join, ends at the recording's end, marked cut")
sleeps = sum(1 for r in iv if r["thread"] == "sleeper" and r["state"] == "sleeping")
check(sleeps >= 50, "the attached sleeper's intervals are there: %d" % sleeps)

# 6. offcputime (libbpf-tools) on the same run of the sleeping fixture: the
# blocked time of the sleeper in the nanosleep stack within 5%.
# The sleeper starts once both are attached (the shell waits on a FIFO), and
# offcputime is stopped by SIGINT once it has ended: neither starts late
# on a busy machine.
go = os.path.join(d, "go")
os.mkfifo(go)
proc = subprocess.Popen(["sh", "-c", "read x < %s; exec %s sleep 80" % (go, fx)])
peer = subprocess.Popen(["offcputime", "-p", str(proc.pid), "600"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
out = os.path.join(d, "peer.mscap")
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "--off-cpu", "--pid", str(proc.pid), "-o", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
wait_bpf_attached(peer)
wait_recording(rec)
with open(go, "w") as f:
    f.write("go\n")
proc.wait()
so, se = rec.communicate(timeout=120)
check(rec.returncode == 0, "record --off-cpu --pid of the sleeper exited 0: %s" % se)
peer.send_signal(signal.SIGINT)
peer_out, peer_err = peer.communicate(timeout=30)
check(peer.returncode == 0, "offcputime ran: %s" % peer_err[-300:])
theirs = 0
block = []
for line in peer_out.splitlines():
    if line.strip().isdigit():
        if any("sleeper (" in l for l in block) and any("nanosleep" in l for l in block):
            theirs += int(line.strip()) * 1000
        block = []
    else:
        block.append(line)
settings, iv, shorts = rows(out)
ours = total(r for r in iv if r["thread"] == "sleeper" and any("nanosleep" in f for f in r["stack"]))
check(theirs > 0.5e9, "offcputime saw the sleeper's nanosleeps: %.1f ms" % (theirs / 1e6))
check(abs(ours - theirs) <= 0.05 * theirs,
      "blocked time in nanosleep: ours %.1f ms, offcputime %.1f ms (within 5%%)" % (ours / 1e6, theirs / 1e6))

# 7. Without BPF privileges the recording goes on without the BPF parts: one
# line for each says why, and the capture's settings say it too.
nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
os.chmod(d, 0o777)
out = os.path.join(d, "nobody.mscap")
p = run(nobody + [MICROSCOPE, "record", "--off-cpu", "--syscalls", "-o", out, "--", fx, "sleep", "10"])
lines = p.stderr.strip().splitlines()
check(p.returncode == 0, "unprivileged record --off-cpu --syscalls still records (%d: %s)" % (p.returncode, p.stderr))
check(sum("off-CPU time not recorded" in l and "CAP_BPF" in l for l in lines) == 1 and
      sum("system calls not recorded" in l and "CAP_BPF" in l for l in lines) == 1,
      "one line for each BPF part, naming what is needed: %s" % lines)
settings = json.loads(run([CAPTURE_OFFCPU, out]).stdout.splitlines()[0])
check(settings["off_cpu"].startswith("off: ") and "CAP_BPF" in settings["off_cpu"],
      "the settings say off-CPU was off and why: %s" % settings["off_cpu"])
rep = report(out)
check(rep["header"]["samples"] > 0, "the CPU samples are there")

# 8. The deep preset records off-CPU time unless --no-off-cpu says not to.
out = os.path.join(d, "deep.mscap")
record(out, [fx, "sleep", "10"], ["--preset", "deep"])
check(json.loads(run([CAPTURE_OFFCPU, out]).stdout.splitlines()[0])["off_cpu"] == "on",
      "--preset deep turns --off-cpu on")
record(out, [fx, "sleep", "10"], ["--preset", "deep", "--no-off-cpu"])
check(json.loads(run([CAPTURE_OFFCPU, out]).stdout.splitlines()[0])["off_cpu"] == "",
      "--no-off-cpu turns it off again")

# 9. Stacks as deep as the thread's: a thread asleep under some 40 KiB of
# frames, hardly ever on CPU (so no walk of its samples taught how far its
# stack goes), has its whole stack in its intervals. Off-CPU copies are
# sized as the samples' (all of the stack in use, to its mapping's end,
# until walks teach less), where a fixed 16 KiB copy ended each of them
# 24 KiB short of deep_root.
out = os.path.join(d, "deep-sleeper.mscap")
record(out, [fx, "deep", "100"], ["--off-cpu"])
fn = functions(report(out, "--metric", "offcpu", "--thread", "deep-sleeper", "--top", "1000"))
slept, whole = fn.get("sleep_phase", (0, 0))[1], fn.get("deep_root", (0, 0))[1]
check(slept >= 95 and whole >= 0.95 * slept,
      "a thread asleep 40 KiB deep: %d of its %d intervals in sleep_phase have deep_root" %
      (whole, slept))
