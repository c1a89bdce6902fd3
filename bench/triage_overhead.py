#!/usr/bin/env python3
"""triage's own cost to the program it looks at, in alternating runs
(plain, triage, plain, triage, ...), medians of --repeat each:

- a CPU-bound program of a fixed amount of work (spin2 10000: two threads
  on both CPUs): its wall time and its CPU time (user + system, from
  /usr/bin/time around the fixture itself, inside the triage);
- a storm of cheap system calls (syscall_storm: 1,000,000 getppid, the
  loop's own time as it prints it), where tracing every call costs most.

Usage: bench/triage_overhead.py [--build build] [--repeat 7]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, input="\n")
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]))
    return p


def timed(cmd, triage):
    """(wall s, CPU s) of the fixture, by /usr/bin/time inside any triage."""
    inner = ["/usr/bin/time", "-f", "TIME %e %U %S", *cmd]
    p = run(triage + ["--", *inner] if triage else inner)
    m = re.search(r"TIME ([\d.]+) ([\d.]+) ([\d.]+)", p.stderr)
    if not m:
        sys.exit("no time in: %s" % p.stderr[-500:])
    return float(m.group(1)), float(m.group(2)) + float(m.group(3)), p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    ms = os.path.join(a.build, "microscope")
    d = tempfile.mkdtemp(prefix="triage-overhead-")
    triage = [ms, "triage", "--json", "-o", d + "/t.mscap"]
    loop = [os.path.join(a.build, "tests", "spin2"), "10000"]
    storm = [os.path.join(a.build, "tests", "syscall_storm"), "1000000"]
    rows = {"loop": ([], []), "storm": ([], [])}
    for _ in range(a.repeat):
        for name, cmd in (("loop", loop), ("storm", storm)):
            for i, wrap in enumerate((None, triage)):
                wall, cpu, out = timed(cmd, wrap)
                if name == "storm":
                    # The loop's own seconds, as the fixture prints them.
                    m = re.search(r"loop_s=([\d.]+)", out)
                    wall = float(m.group(1)) if m else wall
                rows[name][i].append((wall, cpu))
    for name, (plain, under) in rows.items():
        pw = statistics.median(w for w, _ in plain)
        tw = statistics.median(w for w, _ in under)
        pc = statistics.median(c for _, c in plain)
        tc = statistics.median(c for _, c in under)
        print("%-6s wall: plain %.3f s, under triage %.3f s (%+.1f%%); target CPU: plain %.3f s, "
              "under triage %.3f s (%+.1f%%)" % (name, pw, tw, 100 * (tw / pw - 1), pc, tc,
                                                  100 * (tc / pc - 1)))


if __name__ == "__main__":
    main()
