#!/usr/bin/env python3
"""perf.data read by microscope against perf's own report, on the same
`--call-graph dwarf` recording of a real program (Debian's g++ compiling a
C++ file, or --program): paired runs alternating A B A B, medians, the
ratio, and each side's max RSS.

- A: `perf report --stdio` (perf unwinds every sample's copied stack with
  libdw while it reads);
- B: `microscope convert perf.data -o x.mscap` (microscope unwinds at
  import, names the frames) then `microscope report x.mscap`;
- B's report alone, on the capture made once.

Usage: bench/perf_import.py [--build build] [--repeat 3] [--freq 999]
                            [--program 'g++ -O2 -c FILE.cc -o /tmp/x.o']"""
import argparse
import os
import shlex
import statistics
import subprocess
import tempfile

from report_scale import timed  # (seconds, max RSS KiB) of one run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--freq", default="999")
    here = os.path.dirname(os.path.abspath(__file__))
    source = os.path.join(here, "..", "tests", "fixtures", "unwind_cpp.cc")
    ap.add_argument("--program", default="g++ -O2 -std=c++20 -c %s -o /tmp/perf-import-bench.o" % source)
    a = ap.parse_args()
    ms = os.path.abspath(os.path.join(a.build, "microscope"))
    d = tempfile.mkdtemp(prefix="perf-import-")
    data, cap = d + "/perf.data", d + "/x.mscap"
    subprocess.run(["perf", "record", "-q", "-F", a.freq, "--call-graph", "dwarf", "-o", data, "--",
                    *shlex.split(a.program)], check=True)
    samples = subprocess.run(["perf", "script", "-i", data, "-F", "tid"], capture_output=True,
                             text=True, check=True).stdout.count("\n")
    print("recording: %s, %d samples, %d bytes" % (a.program, samples, os.path.getsize(data)))
    import_and_report = ["sh", "-c", "%s convert %s -o %s && %s report %s" %
                         (ms, data, cap, ms, cap)]
    cases = [("perf report --stdio", ["perf", "report", "--stdio", "-i", data]),
             ("microscope convert + report", import_and_report),
             ("microscope report (capture made)", [ms, "report", cap])]
    runs = {name: [] for name, _ in cases}
    for _ in range(a.repeat):
        for name, cmd in cases:
            runs[name].append(timed(cmd))
    base = statistics.median(t for t, _ in runs[cases[0][0]])
    for name, _ in cases:
        t = statistics.median(x for x, _ in runs[name])
        rss = max(r for _, r in runs[name])
        print("%-34s median %8.3f s  (%s)  max RSS %7.1f MiB  %6.1fx faster than perf report" %
              (name, t, " ".join("%.3f" % x for x, _ in runs[name]), rss / 1024, base / t))


if __name__ == "__main__":
    main()
