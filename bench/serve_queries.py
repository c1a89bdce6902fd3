#!/usr/bin/env python3
"""serve's query path, this build against another one (before and after a
change), paired: the two servers run side by side on the same synthesized
capture and every query is asked of each in turn (A B A B ...), so the
ratio of each pair holds while the machine's speed drifts.

Queries (uncached: each asks for a min_percent or focus not asked before):
  cold       the page's first query on a fresh server (capture read, decoded,
             report computed)
  tree       the whole call tree on a loaded capture
  inverted   the inverted tree
  focus      a focus regex on another function each time
  exclude    an exclude regex (alternation) each time
  flat       the functions table

Prints per query the median time of each build, and the median and range of
the per-pair ratios (this / other).

usage: bench/serve_queries.py --build build --other OLD_BUILD [--samples 1000000] [--repeat 9]"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_view import get, start, stop  # noqa: E402  (one server harness for both)

URL = r"(http://127\.0\.0\.1:\d+/\S*)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--other", required=True, help="the other build directory")
    ap.add_argument("--samples", type=int, default=1000000)
    ap.add_argument("--repeat", type=int, default=9)
    a = ap.parse_args()
    builds = {"this": os.path.abspath(os.path.join(a.build, "microscope")),
              "other": os.path.abspath(os.path.join(a.other, "microscope"))}
    make = os.path.join(a.build, "bench", "make_capture")
    for need in (*builds.values(), make):
        if not os.path.exists(need):
            sys.exit("missing %s" % need)
    d = tempfile.mkdtemp(prefix="serve-queries-")
    cap = os.path.join(d, "s.mscap")
    n = a.samples
    subprocess.run([make, cap, str(n), "3", str(max(200, n // 50)), "skewed"], check=True)
    view = "/api/report?views=tree&min_percent=0.1&top=200"
    names = ["cold", "tree", "inverted", "focus", "exclude", "flat"]
    times = {b: {q: [] for q in names} for b in builds}
    for i in range(a.repeat):
        order = list(builds) if i % 2 == 0 else list(reversed(list(builds)))
        servers = {}
        for b in order:  # cold: a fresh server each, one after the other
            s, url, _ = start([builds[b], "serve", cap], URL)
            times[b]["cold"].append(get(url, view)[0])
            servers[b] = (s, url)
        queries = {
            "tree": view.replace("min_percent=0.1", "min_percent=0.1%d1" % i),
            "inverted": view.replace("views=tree", "views=inverted").replace(
                "min_percent=0.1", "min_percent=0.1%d2" % i),
            "focus": view + "&focus=function_%d" % (10 + i),
            "exclude": view + "&exclude=" + urllib.parse.quote("^function_(%d|%d)$" % (20 + i, 40 + i)),
            "flat": "/api/report?views=flat&top=%d" % (100 + i),
        }
        for q, path in queries.items():
            for b in order:
                times[b][q].append(get(servers[b][1], path)[0])
        for s, _ in servers.values():
            stop(s)
    print("%d samples, %d pairs, this=%s other=%s" % (n, a.repeat, builds["this"], builds["other"]))
    print("%-9s %10s %10s %8s %17s" % ("query", "this ms", "other ms", "ratio", "ratio min..max"))
    for q in names:
        ratios = [x / y for x, y in zip(times["this"][q], times["other"][q])]
        print("%-9s %10.1f %10.1f %8.3f %8.3f..%.3f" % (
            q, 1e3 * statistics.median(times["this"][q]), 1e3 * statistics.median(times["other"][q]),
            statistics.median(ratios), min(ratios), max(ratios)))


if __name__ == "__main__":
    main()
