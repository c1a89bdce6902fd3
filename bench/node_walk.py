#!/usr/bin/env python3
"""The V8 walker's cost (record --node bpf), on the Node fixture
(tests/fixtures/node/workload.js) at 999 Hz:

- slowdown: the fixture's own time unprofiled, under `record --node off`,
  `record --node bpf`, and under the peer, `perf record -g` (999 Hz, frame
  pointers) of the fixture run with --perf-basic-prof; run alternately,
  medians of --runs;
- the BPF walk's cost per sample and per frame: the sampling programs'
  run time per sample (kernel.bpf_stats_enabled; the stack copier, which
  tail-calls the walk) with --node bpf, less theirs with --node off, on
  the shares mode (about 8
  JavaScript frames a sample), recursion (about 49) and a stack 1,000
  calls deep (tests/fixtures/node/deep.js: about 1,000 frames a walk);
- frames named: the share of the samples under top() whose JavaScript
  frames are all named.

usage: bench/node_walk.py BUILD_DIR [--node PATH]... [--runs R] [--scale S]   (as root)"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import runtime_bench

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--node", action="append", default=[])
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--scale", default="2")
args = ap.parse_args()
ms = os.path.join(os.path.abspath(args.build), "microscope")
here = os.path.dirname(os.path.abspath(__file__))
workload = os.path.join(here, "..", "tests", "fixtures", "node", "workload.js")
deep = os.path.join(here, "..", "tests", "fixtures", "node", "deep.js")
nodes = args.node or ["/usr/bin/node"]
tmp = tempfile.mkdtemp(prefix="node-walk-bench-")
cap = os.path.join(tmp, "w.mscap")
env = dict(os.environ, WORKLOAD_TIME="1")
os.chdir(tmp)  # node --perf-basic-prof writes its V8 logs in its working directory


def js_frames_per_sample(mode):
    folded = os.path.join(tmp, "w.folded")
    subprocess.run([ms, "convert", cap, "--look", "js", "--to", "folded", "-o", folded], check=True)
    frames = samples = 0
    for line in open(folded):
        stack, n = line.rsplit(" ", 1)
        fns = stack.split(";")
        if "main" in fns:
            frames += int(n) * len(fns[fns.index("main"):])
            samples += int(n)
    return frames / max(1, samples)


for node in nodes:
    print("== %s (%s)" % (node, subprocess.run([node, "--version"], capture_output=True,
                                               text=True).stdout.strip()))
    kinds = {
        "unprofiled": [node],
        "--node off": [ms, "record", "-q", "-F", "999", "--node", "off", "-o", cap, "--", node],
        "--node bpf": [ms, "record", "-q", "-F", "999", "--node", "bpf", "-o", cap, "--", node],
        "perf -g": ["perf", "record", "-q", "-F", "999", "-g", "-o", os.path.join(tmp, "perf.data"),
                    "--", node, "--perf-basic-prof"],
    }
    times = {k: [] for k in kinds}
    for _ in range(args.runs):
        for k, cmd in kinds.items():
            times[k].append(runtime_bench.timed(cmd + [workload, "shares", args.scale], env))
    base = statistics.median(times["unprofiled"])
    for k, v in times.items():
        m = statistics.median(v)
        print("  shares: %-11s median %.3f s (%s)  %+.1f%% vs unprofiled" %
              (k, m, " ".join("%.3f" % x for x in v), 100 * (m / base - 1)))
    off, on = statistics.median(times["--node off"]), statistics.median(times["--node bpf"])
    print("  --node bpf vs --node off: %+.1f points of the unprofiled time" % (100 * (on - off) / base))
    costs = {}
    for mode in ("shares", "recursion"):
        per_walk, runs = runtime_bench.ns_per_walk(
            [ms, "record", "-q", "--node", "bpf", "-o", cap, "--", node, workload, mode, args.scale],
            env)
        frames = js_frames_per_sample(mode)
        costs[mode] = (per_walk, frames)
        print("  walk cost, %s: %.0f ns per sample (%d walks), %.1f JavaScript frames per sample" %
              (mode, per_walk, runs, frames))
    (a, fa), (b, fb) = costs["shares"], costs["recursion"]
    if fb > fa:
        print("  walk cost per frame: %.0f ns" % ((b - a) / (fb - fa)))
    per_walk, runs = runtime_bench.ns_per_walk(
        [ms, "record", "-q", "--node", "bpf", "-o", cap, "--", node, deep, "1000", "300000000"], env)
    print("  walk cost, 1,000 calls deep: %.0f ns per sample (%d walks), %.0f ns per frame" %
          (per_walk, runs, per_walk / 1000))
    subprocess.run([ms, "record", "-q", "--node", "bpf", "-o", cap, "--", node, workload, "shares",
                    args.scale], check=True, capture_output=True)
    rep = json.loads(subprocess.run([ms, "report", "--json", "--min-percent", "0", cap],
                                    capture_output=True, text=True, check=True).stdout)
    unknown = sum(f["total"]["samples"] for f in rep["functions"]
                  if f["function"].startswith("[unknown JavaScript"))
    under = sum(f["total"]["samples"] for f in rep["functions"] if f["function"] == "top")
    print("  shares: every JavaScript frame named in %.2f%% of the %d samples under top()" %
          (100 * (1 - unknown / max(1, under)), under))
