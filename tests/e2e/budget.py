"""record --budget: on a machine whose two cores are busy, the recorder
keeps its own cost (CPU time and BPF run time, measured by itself) within
the budget once its controller has acted, says each change it made, and the
samples it kept still add up to the CPU time the target spent."""
import os
import signal
import subprocess
import threading
import time

from common import *

require_perf()
d = tmpdir()
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def cpu_over(pid, window):
    """Reads the target's CPU time every 20 ms while window() runs: returns
    window()'s result and the readings, (CLOCK_MONOTONIC ns, CPU seconds)."""
    readings, done = [], threading.Event()

    def read():
        while not done.is_set():
            readings.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC), cpu_seconds(pid)))
            time.sleep(0.02)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        return window(), readings
    finally:
        done.set()
        reader.join()


def cpu_between(readings, start, end):
    """The CPU seconds spent from `start` to `end` (ns), interpolated."""
    def at(t):
        for (t0, c0), (t1, c1) in zip(readings, readings[1:]):
            if t0 <= t <= t1:
                return c0 + (c1 - c0) * (t - t0) / max(t1 - t0, 1)
        raise AssertionError("no CPU readings around %d" % t)
    return at(end) - at(start)


target = subprocess.Popen([fixture("longrun"), "120"], stdout=subprocess.PIPE, text=True)
try:
    check(target.stdout.readline().strip() == "ready", "target started")
    os.kill(target.pid, signal.SIGUSR1)  # a second spinning thread: both cores busy
    time.sleep(0.5)
    out = d + "/budget.mscap"
    p, readings = cpu_over(target.pid, lambda: run(
        [MICROSCOPE, "record", "-q", "--budget", "1%", "-o", out, "--pid", str(target.pid),
         "--duration", "12s"], timeout=120))
    check(p.returncode == 0, "record --budget 1%% exited 0 (%s)" % p.stderr)
    h = report(out)["header"]
    # What the target spent while the capture was open: a sanitized
    # recorder takes seconds to start and to symbolize after its end, and
    # the target's CPU then is in no sample.
    spent = cpu_between(readings, h["start_time"], h["start_time"] + h["duration_ns"])
    check(h["budget_ppm"] == 10000, "the capture says its budget")
    steps = h["budget_steps"]
    check(len(steps) >= 1 and steps[0]["level"] >= 1 and steps[0]["measured_ppm"] > 10000,
          "the controller stepped down from a period over budget: %s" % steps[:2])
    # Each step follows the controller's rule, whichever way this machine's
    # speed took it: down one to three levels after a period over budget,
    # up one after three periods under 40% of it (back to 999 Hz at level 0
    # on a quick machine), and below 999 Hz at every level but 0.
    prev = 0
    for s in steps:
        if s["reason"].startswith("over budget"):
            rule = s["measured_ppm"] > 10000 and prev < s["level"] <= prev + 3
        else:
            rule = (s["reason"].startswith("well under budget") and s["measured_ppm"] < 4000
                    and s["level"] == prev - 1)
        rate = s["frequency"] == 999 if s["level"] == 0 else s["frequency"] < 999
        check(rule and rate, "step to level %d (%d Hz) after level %d: %s" % (s["level"], s["frequency"], prev, s))
        prev = s["level"]
    src = h["sources"]["budget"]["values"]
    steady = src["steady_share_ppm"]
    # Its cost from the fourth second on: within the budget, with a quarter
    # for the period it takes to see and act (periods are 1 s). A sanitized
    # recorder (LAG_FACTOR 3) spends some three times the CPU on the same
    # rounds even at the bottom of its ladder: it gets that factor.
    limit = 12500 * LAG_FACTOR
    check(steady <= limit, "the recorder's own cost from its fourth second: %.2f%% of one CPU "
          "(budget 1%%, allowed %.2f%%; over the whole run %.2f%%, BPF %.3f s of %.3f s)" %
          (steady / 1e4, limit / 1e4, src["share_ppm"] / 1e4, src["bpf_ns"] / 1e9,
           (src["cpu_ns"] + src["bpf_ns"]) / 1e9))
    # The gate keeps what each level says, whatever levels this machine's
    # speed led to: the share kept is the one the steps imply, weighted by
    # the target's CPU time at each level (at 999 Hz before the first step).
    start, end = h["start_time"], h["start_time"] + h["duration_ns"]
    edges = [(start, h["frequency"])] + [(s["time"], s["frequency"]) for s in steps if start < s["time"] < end]
    implied = 0.0
    for (t0, f), (t1, _) in zip(edges, edges[1:] + [(end, 0)]):
        implied += cpu_between(readings, t0, t1) * f / h["frequency"]
    implied /= spent
    kept_share = src["kept"] / max(1, src["kept"] + src["dropped"])
    check(src["dropped"] > 0 and abs(kept_share - implied) <= 0.08,
          "the gate kept %.3f of the samples (kept %d, dropped %d): the steps imply %.3f (within 0.08)" %
          (kept_share, src["kept"], src["dropped"], implied))
    value = h["value"] / 1e9
    check(abs(value - spent) <= 0.15 * spent,
          "kept samples stand for those dropped: %.2f s of CPU in the capture, %.2f s spent by the target" %
          (value, spent))
    text = run([MICROSCOPE, "report", out]).stdout
    check("budget      1.00% of one CPU" in text and "over budget" in text, "report shows the budget and its changes")
    # Each stretch at one sample kept in N (a level below full rate) is a
    # gap of its own, from the step into it: the stacks of the samples it
    # dropped are not known. Whole-rate stretches are none.
    rows = [g for g in report(out, "--lanes")["lanes"].get("gap_rows", []) if g["cause"] == "budget"]
    thinned = [st for st in steps if st["frequency"] < h["frequency"]]
    check(len(rows) >= 1 and all(any(abs(g["begin_ns"] - st["time"]) <= 50e6 and
                                      g["count"] * st["frequency"] in range(h["frequency"] - g["count"],
                                                                            h["frequency"] + g["count"])
                                      for st in thinned) for g in rows) and
          "B" in report(out, "--lanes")["lanes"].get("gaps", "") and
          "budget (" in text,
          "the budget's thinned stretches are gaps: %s (steps below %d Hz: %s)" %
          (rows, h["frequency"], [(st["time"], st["frequency"]) for st in thinned]))
finally:
    target.kill()
    target.wait()

for bad in ("0%", "1", "150%", "x%"):
    p = run([MICROSCOPE, "record", "--budget", bad, "--", "true"])
    check(p.returncode == 2 and "--budget" in p.stderr, "--budget %s refused: %s" % (bad, p.stderr.strip()))
