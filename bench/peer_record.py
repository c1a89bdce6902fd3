#!/usr/bin/env python3
"""Side by side: the same CPU-bound fixture recorded
by `perf record -g -F 999` and by `microscope record -F 999`, repeated, with
medians. For each: samples captured vs expected, target slowdown vs an
unprofiled run, recorder CPU time, file size, and the time to print the top
functions (`perf report --stdio` vs `microscope report`).

Usage: bench/peer_record.py [--build build] [--repeat 5] [--call-graph fp|dwarf]
  fp:    tests/fixtures/split.c (frame pointers), perf record -g vs microscope -g fp
  dwarf: tests/fixtures/unwind.c recurse (-O2 -fomit-frame-pointer),
         perf record --call-graph dwarf,16384 vs microscope (default: auto, 16 KiB)
Run as root (perf needs it for kernel call chains here)."""
import argparse
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_timed(cmd, **kw):
    """Runs cmd; returns (stdout, wall seconds, CPU seconds of it and its descendants)."""
    c0, t0 = children_cpu(), time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    t1, c1 = time.monotonic(), children_cpu()
    if p.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:]))
    return p.stdout, t1 - t0, c1 - c0


def fixture_times(stdout):
    m = re.search(r"wall_s=([0-9.]+) cpu_s=([0-9.]+)", stdout)
    return float(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", default=None, help="fixture rounds (fp: 2000, dwarf: 1000)")
    ap.add_argument("--call-graph", default="fp", choices=["fp", "dwarf"])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--hz", default="999")
    a = ap.parse_args()
    microscope = os.path.join(a.build, "microscope")
    if a.call_graph == "fp":
        target = [os.path.join(a.build, "tests", "split"), a.rounds or "2000"]
        perf_cg, ms_cg = ["-g"], ["-g", "fp"]
    else:
        target = [os.path.join(a.build, "tests", "unwind"), "recurse", a.rounds or "1000"]
        perf_cg, ms_cg = ["--call-graph", "dwarf,16384"], []
    perf = shutil.which("perf")
    if perf is None:
        sys.exit("perf not found (Debian package linux-perf)")
    d = tempfile.mkdtemp(prefix="peer-record-")
    rows = {k: [] for k in ("base_wall", "perf_wall", "ms_wall", "perf_rec_cpu", "ms_rec_cpu",
                            "perf_samples", "ms_samples", "perf_expected", "ms_expected",
                            "perf_bytes", "ms_bytes", "perf_report", "ms_report")}
    def unprofiled():
        out, _, _ = run_timed(target)
        rows["base_wall"].append(fixture_times(out)[0])

    def with_perf():
        pdata = os.path.join(d, "perf.data")
        out, _, cpu = run_timed([perf, "record", "-q", *perf_cg, "-F", a.hz, "-o", pdata, "--", *target])
        wall, tcpu = fixture_times(out)
        rows["perf_wall"].append(wall)
        rows["perf_rec_cpu"].append(cpu - tcpu)
        rows["perf_expected"].append(wall * int(a.hz))
        rows["perf_bytes"].append(os.path.getsize(pdata))
        script, _, _ = run_timed([perf, "script", "-i", pdata, "-F", "time"])
        rows["perf_samples"].append(sum(1 for line in script.splitlines() if line.strip()))
        _, rt, _ = run_timed([perf, "report", "-i", pdata, "--stdio"])
        rows["perf_report"].append(rt)

    def with_microscope():
        cap = os.path.join(d, "run.mscap")
        out, _, cpu = run_timed([microscope, "record", "-q", *ms_cg, "-F", a.hz, "-o", cap, "--", *target])
        wall, tcpu = fixture_times(out)
        rows["ms_wall"].append(wall)
        rows["ms_rec_cpu"].append(cpu - tcpu)
        rows["ms_expected"].append(wall * int(a.hz))
        rows["ms_bytes"].append(os.path.getsize(cap))
        rep, _, _ = run_timed([microscope, "report", "--json", cap])
        rows["ms_samples"].append(int(re.search(r'"samples": (\d+)', rep).group(1)))
        _, rt, _ = run_timed([microscope, "report", cap])
        rows["ms_report"].append(rt)

    rng = random.Random(7)
    for i in range(a.repeat):
        # Unprofiled, perf, microscope in each repetition, in a shuffled
        # order, so that drift and noise hit all three alike.
        steps = [unprofiled, with_perf, with_microscope]
        rng.shuffle(steps)
        for step in steps:
            step()
        print("run %d (%s): base %.3fs perf %.3fs microscope %.3fs" %
              (i + 1, ", ".join(f.__name__ for f in steps), rows["base_wall"][-1],
               rows["perf_wall"][-1], rows["ms_wall"][-1]), flush=True)
    shutil.rmtree(d)
    med = {k: statistics.median(v) for k, v in rows.items()}
    print()
    print("medians of %d runs, %s at %s Hz" % (a.repeat, " ".join(target), a.hz))
    print("%-34s %14s %14s" % ("", "perf " + " ".join(perf_cg), "microscope " + (" ".join(ms_cg) or "(auto)")))
    print("%-34s %13.1f%% %13.1f%%" % ("samples captured / expected",
          100 * med["perf_samples"] / med["perf_expected"], 100 * med["ms_samples"] / med["ms_expected"]))
    print("%-34s %14d %14d" % ("samples", med["perf_samples"], med["ms_samples"]))
    # Slowdown: the median over repetitions of each run's ratio to that
    # repetition's unprofiled run.
    slow = {k: statistics.median(w / b for w, b in zip(rows[k], rows["base_wall"])) - 1
            for k in ("perf_wall", "ms_wall")}
    print("%-34s %13.1f%% %13.1f%%" % ("target slowdown vs unprofiled",
          100 * slow["perf_wall"], 100 * slow["ms_wall"]))
    print("%-34s %13.3fs %13.3fs" % ("recorder CPU time", med["perf_rec_cpu"], med["ms_rec_cpu"]))
    print("%-34s %14d %14d" % ("file bytes", med["perf_bytes"], med["ms_bytes"]))
    print("%-34s %13.3fs %13.3fs" % ("report time", med["perf_report"], med["ms_report"]))
    print()
    size_target, report_target = ("1/4", "5x") if a.call_graph == "fp" else ("1/20", "10x")
    print("capture size: microscope / perf.data = 1/%.1f (target: at most %s)" %
          (med["perf_bytes"] / med["ms_bytes"], size_target))
    print("report: perf report / microscope report = %.1fx (target: at least %s)" %
          (med["perf_report"] / med["ms_report"], report_target))


if __name__ == "__main__":
    main()
