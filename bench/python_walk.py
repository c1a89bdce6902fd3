#!/usr/bin/env python3
"""The Python walker's cost (record --python bpf), on the Python fixtures
(tests/fixtures/python/workload.py) at 999 Hz:

- slowdown: the fixture's own time under `record --python off` and
  `record --python bpf` (and unprofiled), run alternately, medians of --runs;
- the BPF walk's cost per sample and per frame: the sampling programs' run
  time per sample (kernel.bpf_stats_enabled; the stack copier, which
  tail-calls the walk) with --python bpf, less theirs with --python off, on
  a shallow fixture (split, about 3
  Python frames), a deep one (recursion, about 53) and a stack 1,000 calls
  deep (tests/fixtures/python/deep.py: about 1,000 frames a walk);
- frames named: the share of samples whose Python frames are all named.

usage: bench/python_walk.py BUILD_DIR [--python PATH]... [--runs R] [--scale S]   (as root)"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import runtime_bench

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--python", action="append", default=[])
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--scale", default="2")
args = ap.parse_args()
build = os.path.abspath(args.build)
ms = os.path.join(build, "microscope")
here = os.path.dirname(os.path.abspath(__file__))
workload = os.path.join(here, "..", "tests", "fixtures", "python", "workload.py")
deep = os.path.join(here, "..", "tests", "fixtures", "python", "deep.py")
pythons = args.python or ["/usr/bin/python3.11"]
tmp = tempfile.mkdtemp(prefix="python-walk-bench-")
cap = os.path.join(tmp, "w.mscap")
env = dict(os.environ, WORKLOAD_TIME="1")


def timed(cmd):
    return runtime_bench.timed(cmd, env)


def walk_cost(python, mode):
    """The walk's ns per sample while recording `mode`, and the Python frames
    per sample of the capture."""
    per_walk, cnt = runtime_bench.ns_per_walk(
        [ms, "record", "-q", "--python", "bpf", "-o", cap, "--", python, workload, mode,
         args.scale], env)
    folded = os.path.join(tmp, "w.folded")
    subprocess.run([ms, "convert", cap, "--look", "python", "--to", "folded", "-o", folded], check=True)
    frames = samples = 0
    for line in open(folded):
        stack, n = line.rsplit(" ", 1)
        py = [f for f in stack.split(";") if "+0x" not in f]
        if "<module>" in py:
            frames += int(n) * len(py[py.index("<module>"):])
            samples += int(n)
    return per_walk, frames / max(1, samples), cnt


def named(python, mode):
    subprocess.run([ms, "record", "-q", "--python", "bpf", "-o", cap, "--", python, workload, mode,
                    args.scale], check=True, capture_output=True, env=env)
    rep = json.loads(subprocess.run([ms, "report", "--json", "--min-percent", "0", cap],
                                    capture_output=True, text=True, check=True).stdout)
    # Naming (a code object not proved, no walk) apart from placing (the
    # native stack ended before the activation that runs the frames).
    markers = [f for f in rep["functions"] if f["function"].startswith("[unknown Python")]
    placing = sum(f["total"]["samples"] for f in markers if "activations not found" in f["function"])
    unnamed = sum(f["total"]["samples"] for f in markers) - placing
    n = max(1, rep["header"]["samples"])
    return 1 - unnamed / n, 1 - placing / n, rep["header"]["samples"]


for python in pythons:
    print("== %s" % python)
    kinds = {
        "unprofiled": [python],
        "--python off": [ms, "record", "-q", "-F", "999", "--python", "off", "-o", cap, "--", python],
        "--python bpf": [ms, "record", "-q", "-F", "999", "--python", "bpf", "-o", cap, "--", python],
    }
    times = {k: [] for k in kinds}
    for _ in range(args.runs):
        for k, cmd in kinds.items():
            times[k].append(timed(cmd + [workload, "split", args.scale]))
    base = statistics.median(times["unprofiled"])
    for k, v in times.items():
        m = statistics.median(v)
        print("  split: %-14s median %.3f s (%s)  %+.1f%% vs unprofiled" %
              (k, m, " ".join("%.3f" % x for x in v), 100 * (m / base - 1)))
    off, on = statistics.median(times["--python off"]), statistics.median(times["--python bpf"])
    print("  --python bpf vs --python off: %+.1f points of the unprofiled time" %
          (100 * (on - off) / base))
    costs = {}
    for mode in ("split", "recursion"):
        per_walk, frames, runs = walk_cost(python, mode)
        costs[mode] = (per_walk, frames)
        print("  walk cost, %s: %.0f ns per sample (%d walks), %.1f Python frames per sample" %
              (mode, per_walk, runs, frames))
    (a, fa), (b, fb) = costs["split"], costs["recursion"]
    if fb > fa:
        print("  walk cost per frame: %.0f ns" % ((b - a) / (fb - fa)))
    per_walk, runs = runtime_bench.ns_per_walk(
        [ms, "record", "-q", "--python", "bpf", "-o", cap, "--", python, deep, "1000", "3000000"], env)
    print("  walk cost, 1,000 calls deep: %.0f ns per sample (%d walks), %.0f ns per frame" %
          (per_walk, runs, per_walk / 1000))
    for mode in ("split", "recursion", "threads", "qsort", "blocked", "imported"):
        share, placed, samples = named(python, mode)
        print("  %s: every Python frame named in %.2f%% of %d samples; placed in %.2f%%" %
              (mode, 100 * share, samples, 100 * placed))
