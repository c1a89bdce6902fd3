#!/usr/bin/env python3
"""`microscope query` on a 1,000,000-sample capture (synthesized through the
capture writer: bench/make_capture), timed as whole commands, medians of
--repeat runs alternating, with peak memory (max RSS):

- function costs: `report --json` (the flat table), `query` of the
  function_costs view (report's own counting, behind a virtual table), and
  the same costs written in SQL over samples, stacks and frames;
- the alternative the issue asked to measure: building the tables in a
  SQLite database first (`query --export`, which fills one in memory and
  writes it), then the sqlite3 shell on that file for the same questions;
- a plain scan (count and sum of every sample) both ways.

Usage: bench/query_scale.py [--build build] [--samples 1000000] [--repeat 5]"""
import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

from report_scale import timed  # (seconds, max RSS KiB) of one run

# Self and total per function in SQL over the base tables: per leaf stack
# first, then each stack's walk to its root (a function counted once per
# stack). The same written per sample over sample_frames (the tests' form)
# takes minutes at 1M samples of 20 frames: 20M rows grouped twice.
BY_HAND = """WITH RECURSIVE leaf AS (SELECT stack, sum(weight) AS w FROM samples
  WHERE stack IS NOT NULL GROUP BY stack),
walk(leaf, node, depth) AS (SELECT stack, stack, 0 FROM leaf UNION ALL
  SELECT walk.leaf, s.parent, walk.depth + 1 FROM walk JOIN stacks s ON s.id = walk.node
  WHERE s.parent IS NOT NULL),
keyed AS (SELECT walk.leaf AS leaf, coalesce('f' || f.function, 'x' || f.id) AS key, f.name AS name,
  min(walk.depth) AS d FROM walk JOIN stacks s ON s.id = walk.node JOIN frames f ON f.id = s.frame
  GROUP BY walk.leaf, key)
SELECT keyed.name, sum(iif(keyed.d = 0, l.w, 0)) AS self, sum(l.w) AS total
FROM keyed JOIN leaf l ON l.stack = keyed.leaf GROUP BY keyed.key ORDER BY self DESC LIMIT 20"""
COSTS = "SELECT name, self, total FROM function_costs ORDER BY self DESC LIMIT 20"
SCAN = "SELECT count(*), sum(weight) FROM samples"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--samples", default="1000000")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    ms = os.path.join(a.build, "microscope")
    sqlite = shutil.which("sqlite3")
    d = tempfile.mkdtemp(prefix="query-scale-")
    cap, db = d + "/big.mscap", d + "/big.db"
    subprocess.run([os.path.join(a.build, "bench", "make_capture"), cap, a.samples, "3"], check=True)
    subprocess.run([ms, "query", "--export", db, cap], check=True, stderr=subprocess.DEVNULL)
    print("capture: %s samples, %d bytes; exported database %d bytes" %
          (a.samples, os.path.getsize(cap), os.path.getsize(db)))
    q = [ms, "query", "--format", "json", cap]
    cases = [
        ("report --json", [ms, "report", "--json", cap]),
        ("query function_costs", q + [COSTS]),
        ("query by hand (per stack)", q + [BY_HAND]),
        ("query scan", q + [SCAN]),
        ("query --export (build db)", ["sh", "-c", "rm -f %s/x.db; %s query --export %s/x.db %s" %
                                       (d, ms, d, cap)]),
    ]
    if sqlite:
        cases += [
            ("sqlite3 function_costs", [sqlite, db, COSTS]),
            ("sqlite3 by hand (per stack)", [sqlite, db, BY_HAND]),
            ("sqlite3 scan", [sqlite, db, SCAN]),
        ]
    else:
        print("sqlite3 not installed: its cases are left out")
    runs = {name: [] for name, _ in cases}
    for _ in range(a.repeat):  # alternating: A B C ... A B C ...
        for name, cmd in cases:
            runs[name].append(timed(cmd))
    print("%-32s %10s %12s" % ("command", "median s", "max RSS MiB"))
    for name, _ in cases:
        t = statistics.median(r[0] for r in runs[name])
        rss = max(r[1] for r in runs[name]) / 1024
        print("%-32s %10.3f %12.1f" % (name, t, rss))
    shutil.rmtree(d)


if __name__ == "__main__":
    main()
