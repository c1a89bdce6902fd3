#!/usr/bin/env python3
"""Slowdown of a context-switch-heavy program (tests/fixtures/offcpu
pingpong N: two threads bouncing one byte N times over two pipes, timing
themselves) under `microscope record` without and with --off-cpu (default
--off-cpu-min), and under libbpf-tools' offcputime, side by side in a
shuffled order, medians of --runs. Also the intervals microscope stored,
counted as short, and lost.

usage: bench/offcpu_pingpong.py BUILD_DIR [--hops N] [--runs R]   (as root)"""
import argparse
import json
import os
import random
import statistics
import subprocess
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--hops", type=int, default=200000)
ap.add_argument("--runs", type=int, default=5)
args = ap.parse_args()
build = os.path.abspath(args.build)
fx = os.path.join(build, "tests", "offcpu")
tmp = tempfile.mkdtemp(prefix="offcpu-bench-")
cap = os.path.join(tmp, "p.mscap")
ms = os.path.join(build, "microscope")
tools = {
    "unprofiled": [],
    "record": [ms, "record", "-q", "-o", cap, "--"],
    "record --off-cpu": [ms, "record", "-q", "--off-cpu", "-o", cap, "--"],
}


def run(name):
    cmd = tools[name] + [fx, "pingpong", str(args.hops)]
    p = subprocess.run(cmd, capture_output=True, text=True, check=True)
    loop = float(p.stdout.strip().splitlines()[-1])
    extra = {}
    if name == "record --off-cpu":
        rows = [json.loads(l) for l in subprocess.run(
            [os.path.join(build, "tests", "capture_offcpu"), cap], capture_output=True, text=True,
            check=True).stdout.splitlines()]
        extra["stored"] = sum(1 for r in rows if r["kind"] == "interval")
        extra["short"] = sum(r["count"] for r in rows if r["kind"] == "short")
        rep = json.loads(subprocess.run([ms, "report", "--json", cap], capture_output=True, text=True,
                                        check=True).stdout)
        extra["lost"] = sum(p["count"] for p in rep["header"].get("problems", [])
                            if "off-CPU" in p["kind"])
    return loop, extra


def run_offcputime():
    proc = subprocess.Popen(["sh", "-c", "sleep 1; exec %s pingpong %d" % (fx, args.hops)],
                            stdout=subprocess.PIPE, text=True)
    peer = subprocess.Popen(["offcputime", "-p", str(proc.pid)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    out, _ = proc.communicate()
    peer.send_signal(2)
    peer.wait()
    return float(out.strip().splitlines()[-1]), {}


tools["offcputime (peer)"] = None
times = {name: [] for name in tools}
extras = []
for r in range(args.runs):
    order = list(tools)
    random.shuffle(order)
    for name in order:
        loop, extra = run_offcputime() if tools[name] is None else run(name)
        times[name].append(loop)
        if extra:
            extras.append(extra)
base = statistics.median(times["unprofiled"])
print("ping-pong, %d hops, medians of %d runs" % (args.hops, args.runs))
for name, t in times.items():
    m = statistics.median(t)
    print("  %-20s %.3f s  (%+.1f%% vs unprofiled)  runs: %s" %
          (name, m, (m / base - 1) * 100, " ".join("%.3f" % x for x in t)))
for e in extras:
    print("  --off-cpu run: %d intervals stored, %d short counted, %d lost" %
          (e["stored"], e["short"], e["lost"]))
