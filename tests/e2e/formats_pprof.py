"""pprof with Google's own pprof as the consumer: -top and -traces agree with
report and the capture's stacks; capture -> pprof -> capture keeps the flat
and tree results; a profile written by pprof itself (-proto) imports."""
import re

from common import *

PPROF = os.environ.get("PPROF")
require(PPROF and os.path.exists(PPROF),
        "pprof was not built (go and golang-github-google-pprof-dev are installed by scripts/setup)")
d = tmpdir()
cap = d + "/threads.mscap"
make_capture(cap, "threads")
pb = d + "/threads.pb.gz"
p = run([MICROSCOPE, "convert", cap, "--to", "pprof", "-o", pb])
check(p.returncode == 0, "convert --to pprof (%s)" % p.stderr)
rep = report(cap)
ours = {f["function"]: (f["self"]["samples"], f["total"]["samples"]) for f in rep["functions"]}

# pprof -top by sample count: the same functions with the same flat and cum.
# -nodefraction=0: pprof otherwise hides functions under 0.5% of the total.
top = run([PPROF, "-top", "-sample_index=samples", "-nodecount=100000", "-nodefraction=0", pb]).stdout
theirs = {}
for line in top.splitlines():
    m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$", line)
    if m:
        # pprof marks inlined functions "(inline)"; microscope lists them by name.
        name = m.group(3).strip().removesuffix(" (inline)")
        if name in theirs:
            fail("%s listed both inlined and not: cannot compare by name" % name)
        theirs[name] = (int(m.group(1)), int(m.group(2)))
check(len(theirs) > 5, "pprof -top listed %d functions" % len(theirs))
if theirs != ours:
    print({k: (ours.get(k), theirs.get(k)) for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k)})
check(theirs == ours, "pprof -top equals report's flat table (%d functions)" % len(ours))
check(re.search(r"burn_units \(inline\)", top) is not None, "pprof sees burn_units as an inline line of its caller's location")

# Unnamed frames: pprof -top drops addresses at its default (function)
# granularity, so unnamed locations sharing a function-less mapping would be
# one "[cc1plus]" row; each address is a function of its own, named as
# report names it, and the rows equal report's.
build = d + "/build.mscap"
make_capture(build, "build")
build_pb = d + "/build.pb.gz"
p = run([MICROSCOPE, "convert", build, "--to", "pprof", "-o", build_pb])
check(p.returncode == 0, "convert the build capture --to pprof (%s)" % p.stderr)
top = run([PPROF, "-top", "-sample_index=samples", "-nodecount=100000", "-nodefraction=0", build_pb]).stdout
build_theirs = {}
for line in top.splitlines():
    m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+(\d+)\s+[\d.]+%\s+(.+)$", line)
    if m:
        build_theirs[m.group(3).strip()] = (int(m.group(1)), int(m.group(2)))
build_ours = {f["function"]: (f["self"]["samples"], f["total"]["samples"]) for f in report(build)["functions"]}
check("[cc1plus]" not in build_theirs, "pprof -top has no merged [cc1plus] row: %s" % sorted(build_theirs))
check(build_theirs.get("cc1plus+0x4000") == (40, 40) and build_theirs.get("cc1plus+0x40c0") == (160, 160),
      "pprof -top lists each unnamed address as module+0xoffset: %s" % build_theirs)
check(build_theirs == build_ours, "pprof -top equals report's flat table for unnamed frames")
back_build = d + "/build-back.mscap"
check(run([MICROSCOPE, "convert", build_pb, "-o", back_build]).returncode == 0, "build pprof imports")
back_rep = report(back_build)
check(sorted((f["function"], f["self"]["samples"]) for f in back_rep["functions"]) ==
      sorted((k, v[0]) for k, v in build_ours.items()), "unnamed frames survive the round trip")
check(back_rep["header"]["fully_named_samples"] == 0, "and are read back unnamed, not as named functions")

# pprof -traces: each trace (thread label + stack) with its count equals the
# capture's stacks per thread, as `convert --to folded --per-thread` lists them.
traces = run([PPROF, "-traces", "-sample_index=samples", pb]).stdout
pprof_stacks = {}
for block in traces.split("-----------+-------------------------------------------------------"):
    lines = [l for l in block.splitlines() if l.strip()]
    thread = tid = None
    frames = []
    count = None
    for l in lines:
        m = re.match(r"\s*thread:\s+(.*)$", l)
        if m:
            thread = m.group(1).strip()
            continue
        m = re.match(r"\s*tid:\s+(\d+)", l)
        if m:
            tid = m.group(1)
            continue
        if re.match(r"\s*pid:", l):
            continue
        m = re.match(r"\s*(\d+)\s+(\S.*)$", l)
        if m and count is None:
            count = int(m.group(1))
            frames.append(m.group(2).strip().removesuffix(" (inline)"))
        elif count is not None:
            frames.append(l.strip().removesuffix(" (inline)"))
    if count is not None:
        key = "%s-%s;%s" % (thread, tid, ";".join(reversed(frames)))
        pprof_stacks[key] = pprof_stacks.get(key, 0) + count
folded = d + "/threads.folded"
run([MICROSCOPE, "convert", cap, "--to", "folded", "--per-thread", "-o", folded])
our_stacks = {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    our_stacks[stack] = int(n)
check(pprof_stacks == our_stacks, "pprof -traces equals the capture's stacks per thread (%d stacks)" % len(our_stacks))

# Round trip: capture -> pprof -> capture gives the same flat and tree.
back = d + "/back.mscap"
p = run([MICROSCOPE, "convert", pb, "-o", back])
check(p.returncode == 0, "pprof imports (%s)" % p.stderr)
r1 = report(cap, "--tree", "--min-percent", "0")
r2 = report(back, "--tree", "--min-percent", "0")
strip = lambda fs: sorted((f["function"], f["self"]["samples"], f["total"]["samples"], f["self"]["value"]) for f in fs)
check(strip(r1["functions"]) == strip(r2["functions"]), "round trip keeps the flat table")
check(tree_paths(r1) == tree_paths(r2), "round trip keeps the call tree")
t1 = {t["name"]: t["samples"] for t in report(cap, "--threads")["threads"]}
t2 = {t["name"]: t["samples"] for t in report(back, "--threads")["threads"]}
check(t1 == t2, "round trip keeps per-thread totals")

# Source lines reach pprof: -lines names file:line of the hot functions.
lines = run([PPROF, "-top", "-lines", "-sample_index=samples", pb]).stdout
check(re.search(r"work_c .*threads\.c:\d+", lines) is not None or re.search(r"work_c .*burn\.h:\d+", lines) is not None,
      "pprof -lines shows work_c's file:line")
check(report(back, "--granularity", "line")["functions"][0]["function"] ==
      report(cap, "--granularity", "line")["functions"][0]["function"], "lines survive the round trip")

# A profile written by pprof itself imports.
proto = d + "/pprof-written.pb.gz"
with open(proto, "wb") as f:
    f.write(run([PPROF, "-proto", pb], text=False).stdout)
again = d + "/again.mscap"
p = run([MICROSCOPE, "convert", proto, "-o", again])
check(p.returncode == 0, "pprof -proto output imports (%s)" % p.stderr)
check(strip(report(again)["functions"]) == strip(r1["functions"]), "and reads as the same profile")

# Malformed pprof input: a clear error naming the place.
bad = d + "/bad.pb.gz"
with open(pb, "rb") as f:
    data = f.read()
with open(bad, "wb") as f:
    f.write(data[: len(data) // 2])
p = run([MICROSCOPE, "convert", bad, "-o", d + "/x.mscap"])
check(p.returncode == 1 and p.stderr.startswith("microscope: error: %s: gzip data is truncated at compressed byte" % bad),
      "truncated pprof refused: %r" % p.stderr.strip())
check(not os.path.exists(d + "/x.mscap"), "no output written for bad input")
import gzip
# A sample field (2, length-delimited) that claims more bytes than follow:
# malformed whatever the recording held (flipping bytes could land in a
# string and still parse).
raw = bytearray(gzip.decompress(data)) + b"\x12\xff\xff\x03"
with open(bad, "wb") as f:
    f.write(gzip.compress(bytes(raw)))
p = run([MICROSCOPE, "convert", bad, "-o", d + "/x.mscap"])
check(p.returncode == 1 and p.stderr.startswith("microscope: error: " + bad + ": malformed protobuf in the field at byte %d" % (len(raw) - 4)),
      "corrupt pprof refused, naming the byte: %r" % p.stderr.strip())
