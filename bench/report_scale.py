#!/usr/bin/env python3
"""Report, diff and converters on a 1,000,000-sample capture (synthesized
through the capture writer: bench/make_capture), timed as whole commands,
medians of --repeat runs, with peak memory (max RSS) against the capture's
decompressed size. Then `convert --to folded` against `perf script` on a
recording of the same workload (time and bytes).

Usage: bench/report_scale.py [--build build] [--samples 1000000] [--repeat 5]"""
import argparse
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time


def timed(cmd):
    """(seconds, max RSS KiB) of one run, via GNU time."""
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    return dt, int(p.stderr.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--samples", default="1000000")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    ms = os.path.join(a.build, "microscope")
    d = tempfile.mkdtemp(prefix="report-scale-")
    cap, other = d + "/big.mscap", d + "/other.mscap"
    subprocess.run([os.path.join(a.build, "bench", "make_capture"), cap, a.samples, "3"], check=True)
    subprocess.run([os.path.join(a.build, "bench", "make_capture"), other, a.samples, "4"], check=True)
    with open(cap, "rb") as f:
        header = f.read(32)
    payload = struct.unpack_from("<Q", header, 16)[0]
    print("capture: %s samples, %d bytes on disk, %d bytes decompressed" %
          (a.samples, os.path.getsize(cap), payload))
    cases = [
        ("report (flat)", [ms, "report", cap]),
        ("report --flat", [ms, "report", "--flat", cap]),
        ("report --tree", [ms, "report", "--tree", cap]),
        ("report --inverted", [ms, "report", "--inverted", cap]),
        ("report --diff", [ms, "report", cap, "--diff", other]),
        ("convert pprof", [ms, "convert", cap, "--to", "pprof", "-o", d + "/o.pb.gz"]),
        ("convert folded", [ms, "convert", cap, "--to", "folded", "-o", d + "/o.folded"]),
        ("convert chrome", [ms, "convert", cap, "--to", "chrome", "-o", d + "/o.json"]),
        ("convert speedscope", [ms, "convert", cap, "--to", "speedscope", "-o", d + "/o.ss.json"]),
    ]
    print("%-22s %10s %12s %12s" % ("command", "median s", "max RSS MiB", "RSS/payload"))
    for name, cmd in cases:
        runs = [timed(cmd) for _ in range(a.repeat)]
        t = statistics.median(r[0] for r in runs)
        rss = max(r[1] for r in runs) * 1024
        # --diff reads two captures of the same size.
        base = payload * (2 if "--diff" in cmd else 1)
        print("%-22s %10.3f %12.1f %12.2f" % (name, t, rss / 2**20, rss / base))
    for ext in ("pb.gz", "folded", "json", "ss.json"):
        print("  output o.%s: %d bytes" % (ext, os.path.getsize(d + "/o." + ext)))

    # convert --to folded vs perf script, on recordings of the same workload.
    perf = shutil.which("perf")
    if perf:
        target = [os.path.join(a.build, "tests", "unwind"), "recurse", "2000"]
        pdata, mcap = d + "/perf.data", d + "/rec.mscap"
        subprocess.run([perf, "record", "-q", "--call-graph", "dwarf,16384", "-F", "999", "-o", pdata, "--", *target],
                       stdout=subprocess.DEVNULL, check=True)
        subprocess.run([ms, "record", "-q", "-F", "999", "-o", mcap, "--", *target], stdout=subprocess.DEVNULL, check=True)
        pt = statistics.median(timed(["sh", "-c", "%s script -i %s > %s/perf.script" % (perf, pdata, d)])[0]
                               for _ in range(a.repeat))
        mt = statistics.median(timed([ms, "convert", mcap, "--to", "folded", "-o", d + "/rec.folded"])[0]
                               for _ in range(a.repeat))
        print("same workload (%s): perf script %.3f s, %d bytes (from %d-byte perf.data); "
              "microscope convert --to folded %.3f s, %d bytes (from %d-byte capture); %.0fx faster" %
              (" ".join(target[1:]), pt, os.path.getsize(d + "/perf.script"), os.path.getsize(pdata), mt,
               os.path.getsize(d + "/rec.folded"), os.path.getsize(mcap), pt / mt))
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
