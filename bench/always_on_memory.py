#!/usr/bin/env python3
"""An always-on recorder's memory over a long run of a program that keeps
making tasks: tests/churn (a new thread every 10 ms, a new process every
100 ms) recorded with `record --rolling 1s --pid`, the recorder's RssAnon
read every --every seconds for --seconds. With --other OLD/microscope,
OLD records a second churn program at the same time (side by side on the
same machine, so both see the same load).

Prints one line per reading and, per recorder, the growth from the first
reading after --settle seconds to the last, and per minute.

Usage: bench/always_on_memory.py [--build build] [--seconds 600] [--every 10]
                                 [--settle 30] [--other OLD/microscope]"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def rss_anon_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"RssAnon:\s+(\d+)", f.read()).group(1))


def start(microscope, churn, seconds, out):
    target = subprocess.Popen([churn, str(seconds + 60)], stdout=subprocess.PIPE, text=True)
    if target.stdout.readline().strip() != "ready":
        sys.exit("tests/churn did not start")
    rec = subprocess.Popen([microscope, "record", "-q", "--rolling", "1s", "-o", out, "--pid",
                            str(target.pid)], stderr=subprocess.PIPE, text=True)
    return target, rec


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--every", type=float, default=10)
    ap.add_argument("--settle", type=float, default=30)
    ap.add_argument("--other", help="another build's microscope, recorded beside this one")
    a = ap.parse_args()
    churn = os.path.join(a.build, "tests", "churn")
    d = tempfile.mkdtemp(prefix="always-on-memory-")
    runs = {"this": start(os.path.join(a.build, "microscope"), churn, a.seconds, d + "/this.mscap")}
    if a.other:
        runs["other"] = start(a.other, churn, a.seconds, d + "/other.mscap")
    readings = {name: [] for name in runs}
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < a.seconds:
            time.sleep(a.every)
            at = time.monotonic() - t0
            line = "%6.0f s" % at
            for name, (target, rec) in runs.items():
                if rec.poll() is not None:
                    sys.exit("the %s recorder ended early: %s" % (name, rec.stderr.read()))
                kb = rss_anon_kb(rec.pid)
                readings[name].append((at, kb))
                line += "  %s %7d KiB" % (name, kb)
            print(line, flush=True)
    finally:
        for target, rec in runs.values():
            rec.send_signal(signal.SIGINT)
            rec.wait(timeout=60)
            target.kill()
            target.wait()
    for name, rs in readings.items():
        settled = [r for r in rs if r[0] >= a.settle] or rs
        (t_a, kb_a), (t_b, kb_b) = settled[0], settled[-1]
        minutes = max((t_b - t_a) / 60, 1e-9)
        print("%s: RssAnon %d KiB at %.0f s, %d KiB at %.0f s: %+d KiB (%+.1f KiB per minute); "
              "highest %d KiB" % (name, kb_a, t_a, kb_b, t_b, kb_b - kb_a, (kb_b - kb_a) / minutes,
                                  max(kb for _, kb in rs)))


if __name__ == "__main__":
    main()
