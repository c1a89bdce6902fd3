#!/usr/bin/env python3
"""Slowdown of a syscall-heavy program (tests/fixtures/syscall_storm: N
getppid calls, timing its own loop) under `microscope syscalls`,
`strace -c -f` and `perf trace -s`, side by side in a shuffled order,
medians of --runs. Also the calls microscope recorded and lost.

usage: bench/syscall_peers.py BUILD_DIR [--calls N] [--runs R]   (as root)"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--calls", type=int, default=2000000)
ap.add_argument("--runs", type=int, default=5)
args = ap.parse_args()
build = os.path.abspath(args.build)
storm = os.path.join(build, "tests", "syscall_storm")
tmp = tempfile.mkdtemp(prefix="syscall-bench-")
cap = os.path.join(tmp, "s.mscap")
tools = {
    "unprofiled": [],
    "microscope": [os.path.join(build, "microscope"), "syscalls", "-q", "-o", cap, "--"],
    "strace -c -f": ["strace", "-c", "-f", "-o", os.path.join(tmp, "strace.txt")],
    "perf trace -s": ["perf", "trace", "-s", "-o", os.path.join(tmp, "perf.txt")],
}
loops = {t: [] for t in tools}
lost = []
recorded = []
rng = random.Random(1)
for r in range(args.runs):
    order = list(tools)
    rng.shuffle(order)
    for t in order:
        p = subprocess.run(tools[t] + [storm, str(args.calls)], capture_output=True, text=True)
        m = re.search(r"loop_s=([\d.]+)", p.stderr)
        if not m:
            raise SystemExit("%s: no loop time: %s" % (t, p.stderr[-300:]))
        loops[t].append(float(m.group(1)))
        if t == "microscope":
            rep = json.loads(subprocess.run([os.path.join(build, "microscope"), "report", "--json", cap],
                                            capture_output=True, text=True).stdout)
            recorded.append(rep["syscalls"]["calls"])
            lost.append(rep["header"]["lost_records"])
base = statistics.median(loops["unprofiled"])
print("%d getppid calls, medians of %d runs" % (args.calls, args.runs))
print("%-15s %10s %10s" % ("tool", "loop s", "slowdown"))
for t in tools:
    med = statistics.median(loops[t])
    print("%-15s %10.3f %9.1fx" % (t, med, med / base))
slow = {t: statistics.median(loops[t]) / base - 1 for t in tools if t != "unprofiled"}
print("added time vs microscope: strace %.1fx, perf trace %.1fx (target: strace >= 10x)" % (
    slow["strace -c -f"] / slow["microscope"], slow["perf trace -s"] / slow["microscope"]))
print("microscope recorded %s calls per run, lost %s" % (recorded, lost))
