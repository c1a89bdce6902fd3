"""Captures recorded by an earlier microscope (tests/data/captures: format
2.9, made on 2026-12-04 from the fixtures) give the same report text, JSON
and exports as they did then (tests/data/captures/expected, gzipped). A change to how
captures are read, validated, windowed or reported that changes any answer
fails here; a change meant to change an answer updates the expectations with
`capture_golden.py --update` and says why in its commit.

  native   offcpu sleep 30, with --off-cpu --syscalls --syscall-stack-min 1ms
  spin2    spin2 1500 under -g dwarf
  later    spin2 500 with --symbolize later (build IDs and offsets only)
  python   workload.py split 2 with --off-cpu (CPython 3.13, Debian's)
  node     workload.js shares 1 (Node 22)
  probes   probes timed 100 with --probes all
"""
import difflib
import gzip
import os
import sys

from common import *

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "captures")
EXPECTED = os.path.join(DATA, "expected")

ALL = ["native", "spin2", "later", "python", "node", "probes"]
# (name of the expectation, capture, command after `microscope`)
CASES = []
for c in ALL:
    CASES += [
        (c + ".report", c, ["report"]),
        (c + ".json", c, ["report", "--json", "--tree", "--inverted", "--threads", "--lanes"]),
        (c + ".folded", c, ["convert", "--to", "folded", "--per-thread"]),
    ]
CASES += [
    ("native.wall", "native", ["report", "--metric", "wall", "--by-state", "--tree"]),
    ("native.syscalls", "native", ["report", "--syscalls", "--json"]),
    ("spin2.lines", "spin2", ["report", "--granularity", "line", "--inlines", "off", "--json"]),
    # --native-leaves: the looks as they were when recorded (they now drop
    # the C library's and kernel's leaves by default).
    ("python.look", "python", ["report", "--look", "python", "--native-leaves", "--tree", "--threads"]),
    ("python.offcpu", "python", ["report", "--metric", "offcpu", "--json"]),
    ("node.look", "node", ["report", "--look", "js", "--native-leaves", "--inverted", "--focus",
                           "leaf"]),
    ("probes.zones", "probes", ["report", "--zones", "--json", "--zone", "spin"]),
    ("spin2.diff", "spin2", ["report", "--diff", os.path.join(DATA, "later.mscap")]),
    ("native.speedscope", "native", ["convert", "--to", "speedscope", "--metric", "wall"]),
    ("python.offcpu.folded", "python", ["convert", "--to", "folded", "--metric", "offcpu"]),
]
OUT = tmpdir() + "/out"


def output(capture, command):
    path = os.path.join(DATA, capture + ".mscap")
    if command[0] == "report":
        args = [MICROSCOPE, "report", "--color", "never"] + command[1:] + [path]
    else:
        args = [MICROSCOPE] + command + ["-o", OUT, path]
    p = run(args)
    if p.returncode != 0:
        fail("%s: exit %d: %s" % (" ".join(command), p.returncode, p.stderr[-500:]))
    if command[0] == "report":
        return p.stdout
    with open(OUT) as f:
        return f.read()


update = "--update" in sys.argv
os.makedirs(EXPECTED, exist_ok=True)
for name, capture, command in CASES:
    got = output(capture, command)
    want_path = os.path.join(EXPECTED, name + ".gz")
    if update:
        # mtime 0: the same output gives the same file.
        with open(want_path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as z:
            z.write(got.encode())
        continue
    with gzip.open(want_path, "rt") as f:
        want = f.read()
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            "expected/" + name, "now", n=2))
        fail("%s (%s) differs from what the capture gave when it was recorded:\n%s"
             % (name, " ".join(command), diff[:4000]))
print("%d outputs of %d captures as recorded" % (len(CASES), len(ALL)))
