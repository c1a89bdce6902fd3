#!/usr/bin/env python3
"""What profiling costs the profiled program, guarded by a baseline.

Each fixture runs a fixed amount of work, unprofiled and under each
profiler, attached before the work starts (the fixture waits for a line on
stdin), rounds alternating the order of the modes. Per fixture and mode:

  slowdown          the fixture's own wall time / the unprofiled run's of the
                    same round: median, quartiles, min and max
  target_cpu_ratio  the fixture's own CPU time / the unprofiled run's: the
                    cost in its own context (the sampling interrupt, the
                    kernel's stack copy), shown as "tgt cpu"
  cpu_per_target_s  the profiler's CPU time (all of it: start, collection,
                    naming, writing) per second of the fixture's CPU time
  collect_per_target_s  the profiler's CPU time while the fixture worked
                    (from 0.2 s in to 0.1 s before the end, by schedstat)
                    per second of the fixture's CPU time: what collecting
                    costs, competing with the fixture for its CPUs
  peak_rss_mb       the profiler's peak resident memory

Fixtures: spin2 (two threads saturating both cores, C), python (CPython
split workload), node (V8 shares workload), pingpong (two threads bouncing
a byte over pipes: a context switch a hop); modes: none, microscope's
presets (quick, default, deep) and levels (microscope-level0 to 3: record
--level), perf record --call-graph dwarf and -g (fp).

  bench/overhead.py [--build build] [--rounds 5] [--fixtures spin2,python,node]
                    [--modes ...] [--out results.json]
  bench/overhead.py --compare bench/overhead.json [...]   exit 1 on a regression
  bench/overhead.py --write bench/overhead.json --cause "why the baseline moves"
  bench/overhead.py --other OLD/microscope ...   another build beside this one

A regression is a median slowdown above the baseline's by more than the
noise this run and the baseline measured (the larger interquartile range of
the two, and at least one point). Run as root on an otherwise idle machine."""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PY_DRIVER = r"""
import os, runpy, sys, time
script = sys.argv[1]
sys.argv = sys.argv[1:]
print("ready", flush=True)
sys.stdin.readline()
t0, c0 = time.monotonic(), time.process_time()
runpy.run_path(script, run_name="__main__")
print("driver wall_s=%.6f cpu_s=%.6f" % (time.monotonic() - t0, time.process_time() - c0), flush=True)
"""

# Preloaded (node -r) before the workload, which runs as the main module.
NODE_DRIVER = r"""
const fs = require('fs');
process.stdout.write('ready\n');
fs.readSync(0, Buffer.alloc(16));
const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
process.on('exit', () => {
  const c = process.cpuUsage(c0);
  process.stdout.write(`driver wall_s=${Number(process.hrtime.bigint() - t0) / 1e9} cpu_s=${(c.user + c.system) / 1e6}\n`);
});
"""


def fixtures(build, tmp):
    # Debian's interpreter, as the tests record it (a pyenv shim on PATH ran
    # the fixture in 2.1 s or 4.2 s from run to run, with no profiler too).
    python = next((p for p in ("/usr/bin/python3.11", shutil.which("python3.11")) if p and
                   os.path.exists(p)), sys.executable)
    node = shutil.which("node")
    driver = os.path.join(tmp, "driver.js")
    with open(driver, "w") as f:
        f.write(NODE_DRIVER)
    return {
        "spin2": [os.path.join(build, "tests", "spin2"), "20000"],
        "python": [python, "-c", PY_DRIVER, os.path.join(ROOT, "tests/fixtures/python/workload.py"),
                   "split", "2"],
        "node": [node, "-r", driver, os.path.join(ROOT, "tests/fixtures/node/workload.js"),
                 "shares", "2"] if node else None,
        # Two threads bouncing a byte over pipes: a context switch a hop,
        # what off-CPU tracing costs most on (OFFCPU_GATE: ready, go, times).
        "pingpong": ["env", "OFFCPU_GATE=1", os.path.join(build, "tests", "offcpu"), "pingpong",
                     "100000"],
    }


def modes(build, tmp, other=None):
    ms = os.path.join(build, "microscope")
    out = os.path.join(tmp, "out")
    perf = shutil.which("perf")
    m = {"none": None}
    for preset in ("quick", "default", "deep"):
        m["microscope-" + preset] = [ms, "record", "-q", "--preset", preset, "-o", out + ".mscap", "--pid"]
    for level in range(4):  # record --level
        m["microscope-level%d" % level] = [ms, "record", "-q", "--level", str(level), "-o",
                                           out + ".mscap", "--pid"]
    if other:
        # Another build's recorder beside this one's, before and after a change.
        m["other-default"] = [other, "record", "-q", "-o", out + ".other.mscap", "--pid"]
    if perf:
        m["perf-dwarf"] = [perf, "record", "-q", "-F", "999", "--call-graph", "dwarf", "-o", out + ".data", "-p"]
        m["perf-fp"] = [perf, "record", "-q", "-F", "999", "-g", "-o", out + ".data", "-p"]
    return m


def parse_result(line):
    fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
    return float(fields["wall_s"]), float(fields["cpu_s"])


def task_cpu_s(pid):
    """The CPU time of all of a process's threads, from the scheduler's own
    account (schedstat: exact, unlike the tick-sampled /proc/PID/stat)."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


class Collecting(threading.Thread):
    """Reads the profiler's CPU time every 50 ms while the fixture works:
    its rate from 0.2 s into the work to the last reading 0.1 s before the
    end is what collecting costs, without the start and the final write."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.readings, self.done = pid, [], threading.Event()

    def run(self):
        while not self.done.wait(0.05):
            cpu = task_cpu_s(self.pid)
            if cpu is not None:
                self.readings.append((time.monotonic(), cpu))

    def rate(self, began, ended):
        kept = [r for r in self.readings if began + 0.2 <= r[0] <= ended - 0.1]
        if len(kept) < 2 or kept[-1][0] - kept[0][0] < 0.5:
            return float("nan")
        return (kept[-1][1] - kept[0][1]) / (kept[-1][0] - kept[0][0])


def run_once(fixture, profiler):
    """One run: (fixture wall s, fixture CPU s, profiler CPU s, profiler peak
    RSS MiB, profiler CPU s per s while the fixture worked)."""
    target = subprocess.Popen(fixture, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    if target.stdout.readline().strip() != "ready":
        sys.exit("fixture did not start: %s" % fixture)
    prof = None
    if profiler is not None:
        prof = subprocess.Popen(profiler + [str(target.pid)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
    time.sleep(0.6)  # the profiler attaches (BPF programs load) before the work starts
    collecting = Collecting(prof.pid) if prof is not None else None
    if collecting:
        collecting.start()
    began = time.monotonic()
    target.stdin.write("go\n")
    target.stdin.flush()
    result = None
    for line in target.stdout:
        if "wall_s=" in line:
            result = parse_result(line)
            ended = time.monotonic()
    target.wait()
    rate = 0.0
    if collecting:
        collecting.done.set()
        collecting.join()
        rate = collecting.rate(began, ended) if result else float("nan")
    if result is None:
        sys.exit("fixture printed no times: %s" % fixture)
    cpu = rss = 0.0
    if prof is not None:
        _, status, ru = os.wait4(prof.pid, 0)
        prof.returncode = os.waitstatus_to_exitcode(status)
        if prof.returncode != 0:
            sys.exit("profiler failed (%d): %s\n%s" % (prof.returncode, profiler, prof.stderr.read()[-2000:]))
        cpu = ru.ru_utime + ru.ru_stime
        rss = ru.ru_maxrss / 1024.0
    return result[0], result[1], cpu, rss, rate


def quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def measure(args):
    tmp = tempfile.mkdtemp(prefix="overhead.")
    try:
        fx = {k: v for k, v in fixtures(args.build, tmp).items() if k in args.fixtures and v}
        ms = {k: v for k, v in modes(args.build, tmp, args.other).items()
              if k in args.modes or k == "other-default"}
        if "none" not in ms:
            sys.exit("the modes must include none (the unprofiled run each slowdown divides by)")
        out = {}
        for name, fixture in fx.items():
            runs = {m: [] for m in ms}
            order = list(ms)
            for r in range(args.rounds):
                for m in order:
                    runs[m].append(run_once(fixture, ms[m]))
                    print("  %s round %d %-18s wall %.3f s" % (name, r + 1, m, runs[m][-1][0]), file=sys.stderr)
                order = order[1:] + order[:1]  # alternate who goes first
            res = {}
            for m in ms:
                slow = [runs[m][i][0] / runs["none"][i][0] for i in range(args.rounds)]
                own = [runs[m][i][1] / runs["none"][i][1] for i in range(args.rounds)]
                q1, q3 = quartiles(slow)
                res[m] = {
                    "slowdown": round(statistics.median(slow), 4),
                    "slowdown_q1": round(q1, 4),
                    "slowdown_q3": round(q3, 4),
                    "slowdown_min": round(min(slow), 4),
                    "slowdown_max": round(max(slow), 4),
                    "cpu_per_target_s": round(statistics.median(x[2] / x[1] for x in runs[m]), 4),
                    # The fixture's own CPU time against the unprofiled run's:
                    # the cost in its own context (the interrupt, the kernel's
                    # stack copy), without the profiler's CPU competing.
                    "target_cpu_ratio": round(statistics.median(own), 4),
                    # The profiler's CPU per second of the target's CPU while
                    # the work ran (its rate over the fixture's CPU rate).
                    "collect_per_target_s": round(statistics.median(
                        x[4] / (x[1] / x[0]) for x in runs[m]), 4) if m != "none" else 0.0,
                    "peak_rss_mb": round(statistics.median(x[3] for x in runs[m]), 1),
                    "fixture_wall_s": round(statistics.median(x[0] for x in runs[m]), 3),
                }
            out[name] = res
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def machine():
    return {"kernel": platform.release(), "cpus": os.cpu_count(), "host": platform.node()}


def table(results, baseline=None, floor=None):
    """Prints the results, each held against the baseline's; `floor`: a mode
    both runs measured whose slowdown each is taken from first (another
    machine's baseline: what sampling itself costs differs between them)."""
    regressions = []
    print("%-8s %-18s %9s %17s %8s %10s %10s %8s%s" % (
        "fixture", "mode", "slowdown", "quartiles", "tgt cpu", "cpu/tgt s", "collect", "rss MB",
        "   baseline  verdict" if baseline else ""))
    for name, res in results.items():
        for m, r in res.items():
            line = "%-8s %-18s %+8.1f%% %7.1f%%..%5.1f%% %+7.1f%% %10.3f %10.4f %8.1f" % (
                name, m, (r["slowdown"] - 1) * 100, (r["slowdown_q1"] - 1) * 100, (r["slowdown_q3"] - 1) * 100,
                (r.get("target_cpu_ratio", 1) - 1) * 100, r["cpu_per_target_s"],
                r.get("collect_per_target_s", float("nan")), r["peak_rss_mb"])
            b = (baseline or {}).get(name, {}).get(m)
            base_floor = (baseline or {}).get(name, {}).get(floor) if floor else None
            if floor and (base_floor is None or floor not in res):
                b = None  # another machine, and nothing both runs measured to hold it against
            if b is not None:
                noise = max(0.01, r["slowdown_q3"] - r["slowdown_q1"], b["slowdown_q3"] - b["slowdown_q1"])
                shift = res[floor]["slowdown"] - base_floor["slowdown"] if floor else 0.0
                worse = r["slowdown"] - b["slowdown"] - shift > noise
                line += "   %+6.1f%%   %s" % ((b["slowdown"] - 1) * 100,
                                              "REGRESSION (noise %.1f points)" % (noise * 100) if worse else "ok")
                if worse:
                    regressions.append("%s %s" % (name, m))
            print(line)
    return regressions


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--fixtures", default="spin2,python,node")
    p.add_argument("--modes", default="none,microscope-quick,microscope-default,microscope-deep,perf-dwarf,perf-fp")
    p.add_argument("--other", help="another microscope binary: its default preset runs as other-default")
    p.add_argument("--out", help="write this run's results (JSON)")
    p.add_argument("--compare", help="a baseline (JSON) to hold this run against")
    p.add_argument("--write", help="write this run as the new baseline (JSON); needs --cause")
    p.add_argument("--cause", help="why the baseline moves (kept in it)")
    args = p.parse_args()
    args.fixtures = args.fixtures.split(",")
    args.modes = args.modes.split(",")
    if args.write and not args.cause:
        sys.exit("--write needs --cause: a new baseline says why it moved")
    results = measure(args)
    baseline, floor = None, None
    if args.compare:
        with open(args.compare) as f:
            doc = json.load(f)
        baseline = doc["results"]
        if doc.get("machine") != machine():
            # Sampling alone costs what the machine makes it cost (perf -g:
            # +2.1% on one kernel build, +6.7% on the next): modes are held
            # against the baseline by their excess over perf fp in each run.
            floor = "perf-fp"
            print("the baseline was measured on another machine (%s): each mode is held against it "
                  "by its slowdown beyond %s's in the same run" % (doc.get("machine"), floor))
    regressions = table(results, baseline, floor)
    doc = {
        "machine": machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rounds": args.rounds,
        "results": results,
    }
    if args.cause:
        doc["cause"] = args.cause
    for path in filter(None, (args.out, args.write)):
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if regressions:
        print("regressions beyond the noise: " + ", ".join(regressions))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
