#!/usr/bin/env python3
"""What the probes SDK costs (docs/probes.md), medians of --runs:

- C: a zone begin + end (bench/probes_bench) with no recorder, with a
  recorder listening and the site off, and with the recorder draining
  (every pair written into the ring and read by the recorder);
- the recorder: its CPU time per million records, attached to a program
  writing zone pairs at --rate pairs a second for --seconds (the fixture's
  stream mode), against the same recording without --probes;
- Python (sdk/python) and Node.js (sdk/node): a zone pair (`with zone:`,
  a decorated call less a plain one; `zone.begin(); zone.end()`,
  `zone.run(fn)` less `fn()`) without the native library, with it and no
  recorder, and under a recorder draining.

usage: bench/probes_costs.py BUILD_DIR [--runs R] [--python PATH]... [--node PATH]...   (as root)"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--rate", type=int, default=500000)
ap.add_argument("--seconds", type=float, default=3.0)
ap.add_argument("--python", action="append", default=[])
ap.add_argument("--node", action="append", default=[])
args = ap.parse_args()
build = os.path.abspath(args.build)
here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)
ms = os.path.join(build, "microscope")
tmp = tempfile.mkdtemp(prefix="probes-costs-")
cap = os.path.join(tmp, "p.mscap")
lib = os.path.join(build, "sdk", "c", "libmicroscope.so")
addon = os.path.join(build, "sdk", "node", "microscope.node")


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return "%.2f-%.2f" % (min(xs), max(xs)) if xs else "-"


def recorded(cmd, selection, env=None):
    return [ms, "record", "-q", "-F", "99", "--probes", selection, "-o", cap, "--", *cmd]


# C zone pairs.
def c_pairs(cmd, env):
    p = subprocess.run(cmd + ["--benchmark_filter=ZonePair", "--benchmark_min_time=0.05",
                              "--benchmark_format=json"], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise SystemExit("probes_bench failed: " + p.stderr[-500:])
    out = {}
    for b in json.loads(p.stdout[p.stdout.find("{"):])["benchmarks"]:
        out[b["name"].split("/")[1]] = (b["ns_per_pair"] * 1e9, b["dropped"], b["recording"])
    return out


bench = [os.path.join(build, "bench", "probes_bench")]
alone, off, on = [], [], []
for _ in range(args.runs):
    a = c_pairs(bench, dict(os.environ))
    alone.append(a["site_off"][0])
    r = c_pairs(recorded(bench, "bench.on"), dict(os.environ, PROBES_BENCH_RECORDED="1"))
    assert r["site_on"][2] == 1, "the benchmark ran without its recorder"
    assert r["site_on"][1] == 0, "pairs were dropped: not all were written"
    off.append(r["site_off"][0])
    on.append(r["site_on"][0])
print("C zone pair (ns), medians of %d runs:" % args.runs)
print("  no recorder                %6.2f  (%s)" % (median(alone), spread(alone)))
print("  recorder listening, off    %6.2f  (%s)" % (median(off), spread(off)))
print("  recorder draining          %6.2f  (%s)" % (median(on), spread(on)))


# The recorder's drain cost: attached to a program streaming zone pairs.
def recorder_cpu(selection):
    target = subprocess.Popen([os.path.join(build, "tests", "probes"), "stream", str(args.rate),
                               str(args.seconds + 2)], stdout=subprocess.PIPE, text=True)
    target.stdout.readline()
    cmd = [ms, "record", "-q", "-F", "99", "-o", cap, "--pid", str(target.pid), "-d",
           "%gs" % args.seconds]
    if selection:
        cmd += ["--probes", selection]
    rec = subprocess.Popen(cmd)
    _, status, usage = os.wait4(rec.pid, 0)
    target.wait()
    records = 0
    if selection:
        rep = json.loads(subprocess.run([ms, "report", "--json", "--zones", cap], capture_output=True,
                                        text=True).stdout)
        records = sum(2 * r["count"] for r in rep["zones"]["rows"])
    return usage.ru_utime + usage.ru_stime, records


with_probes, without = [], []
records = []
for _ in range(args.runs):
    cpu, n = recorder_cpu("all")
    with_probes.append(cpu)
    records.append(n)
    without.append(recorder_cpu(None)[0])
n = median(records)
extra = median(with_probes) - median(without)
print("recorder, attached %gs to %d pairs/s (%d records), medians of %d:" %
      (args.seconds, args.rate, n, args.runs))
print("  CPU with --probes %.3f s, without %.3f s: %.1f ms per million records" %
      (median(with_probes), median(without), 1000 * extra / (n / 1e6) if n else float("nan")))

PY = r'''
import os, sys, time
import microscope
if os.environ.get("WAIT"):
    for _ in range(1000):
        if microscope.recording(): break
        time.sleep(0.01)
N = 100000
z = microscope.zone("bench.py")
@microscope.zone("bench.py.call")
def zoned(): pass
def plain(): pass
def per(fn):
    t = time.perf_counter_ns(); fn(); return (time.perf_counter_ns() - t) / N
def with_zone():
    for _ in range(N):
        with z: pass
def empty():
    for _ in range(N): pass
def calls_zoned():
    for _ in range(N): zoned()
def calls_plain():
    for _ in range(N): plain()
print("with %.1f call %.1f available %d recording %d" % (per(with_zone) - per(empty),
      per(calls_zoned) - per(calls_plain), microscope.available, microscope.recording()))
'''

JS = r'''
const microscope = require(process.env.SDK);
const N = 200000;
const z = microscope.zone('bench.js');
const plain = () => 0;
function per(fn) { const t = process.hrtime.bigint(); fn(); return Number(process.hrtime.bigint() - t) / N; }
async function main() {
  if (process.env.WAIT) for (let i = 0; i < 1000 && !microscope.recording(); ++i) await new Promise(r => setTimeout(r, 10));
  const empty = per(() => { for (let i = 0; i < N; ++i) plain(); });
  const pair = per(() => { for (let i = 0; i < N; ++i) { z.begin(); z.end(); } });
  const run = per(() => { for (let i = 0; i < N; ++i) z.run(plain); });
  console.log(`pair ${(pair - empty / 2).toFixed(1)} run ${(run - empty).toFixed(1)} available ${microscope.available ? 1 : 0} recording ${microscope.recording() ? 1 : 0}`);
}
main();
'''


def runtime_costs(label, base, env_lib, env_nolib, pattern):
    cases = [("no native library", base, env_nolib), ("library, no recorder", base, env_lib),
             ("recorder draining", recorded(base, "bench.*"), dict(env_lib, WAIT="1"))]
    for name, cmd, env in cases:
        vals = []
        for _ in range(args.runs):
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            m = re.search(pattern, p.stdout)
            if not m:
                raise SystemExit("%s %s: %s %s" % (label, name, p.stdout, p.stderr[-300:]))
            vals.append(tuple(float(x) for x in m.groups()))
        cols = list(zip(*vals))
        print("  %-22s %s" % (name, "  ".join("%7.1f (%s)" % (median(c), spread(c)) for c in cols[:2])))


for python in args.python or ["/usr/bin/python3.11"]:
    base = [python, "-c", PY]
    env = dict(os.environ, PYTHONPATH=os.path.join(root, "sdk", "python"), MICROSCOPE_LIBRARY=lib)
    nolib = dict(env, MICROSCOPE_LIBRARY="/nonexistent")
    nolib.pop("LD_LIBRARY_PATH", None)
    print("Python %s zone pair (ns): `with zone`, a decorated call less a plain one" % python)
    runtime_costs("python", base, env, nolib, r"with ([\d.-]+) call ([\d.-]+) available (\d) recording (\d)")
for node in args.node or ["/usr/bin/node"]:
    base = [node, "-e", JS]
    env = dict(os.environ, SDK=os.path.join(root, "sdk", "node"), MICROSCOPE_NODE_ADDON=addon)
    nolib = dict(env, MICROSCOPE_NODE_ADDON="/nonexistent.node")
    print("Node %s zone pair (ns): begin()+end(), run(fn) less fn()" % node)
    runtime_costs("node", base, env, nolib, r"pair ([\d.-]+) run ([\d.-]+) available (\d) recording (\d)")
