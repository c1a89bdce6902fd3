#!/usr/bin/env python3
"""Symbolization speed and agreement: `microscope symbolize` against
eu-addr2line and binutils addr2line on the same distinct addresses.

Addresses are drawn at random inside the functions of libc (its libc6-dbg
debug file), libstdc++ (the libstdc++6-12-dbg build, which carries its
DWARF) and the test fixtures (built -g). microscope gets them as a capture
(bench/make_symbolize_capture: one frame per address, unnamed, as
`record --symbolize later` stores them) and names them with `symbolize`;
each peer gets one batch per module (-a -f -i -C, addresses on stdin).
"microscope" uses its cache of decoded DWARF tables (filled by the warm-up
run; as after any earlier symbolization or recording on the host); "ms
--no-cache" reads every DWARF file afresh, as on first contact.
Each tool's time is the median of --runs, in a shuffled order, with the page
cache warm, and again after dropping it (cold; needs root). Agreement is
per address: the same number of frames (inlined calls + the function), the
same file:line for each, the same inlined function names, and the same
outer function up to GCC's clone suffixes (.part.N, .isra.N, .cold, ...).

usage: bench/symbolize_peers.py BUILD_DIR [--addresses N] [--runs R]"""
import argparse
import bisect
import itertools
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--addresses", type=int, default=120000)
ap.add_argument("--runs", type=int, default=5)
ap.add_argument("--seed", type=int, default=5)
ap.add_argument("--no-cold", action="store_true", help="warm page cache only")
args = ap.parse_args()
build = os.path.abspath(args.build)
MICROSCOPE = os.path.join(build, "microscope")
MAKE = os.path.join(build, "bench", "make_symbolize_capture")
FRAMES = os.path.join(build, "tests", "capture_frames")


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if m else None


libc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
bid = build_id(libc)
libc_debug = "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
stdcxx = "/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30"
# module path (what the capture records) -> (file with DWARF, share of addresses)
modules = {
    libc: (libc_debug, 0.55),
    stdcxx: (stdcxx, 0.43),
    os.path.join(build, "tests", "unwind"): (os.path.join(build, "tests", "unwind"), None),
    os.path.join(build, "tests", "unwind_cpp"): (os.path.join(build, "tests", "unwind_cpp"), None),
    os.path.join(build, "tests", "libunwind_plugin.so"):
        (os.path.join(build, "tests", "libunwind_plugin.so"), None),
}
for m, (f, _) in modules.items():
    if not os.path.exists(f):
        sys.exit("missing %s (scripts/setup installs libc6-dbg and libstdc++6-12-dbg)" % f)

rng = random.Random(args.seed)
addresses = {}
for m, (f, share) in modules.items():
    funcs = []
    for line in subprocess.run(["nm", "-S", "--defined-only", f], capture_output=True,
                               text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW" and int(parts[1], 16) > 0:
            funcs.append((int(parts[0], 16), int(parts[1], 16)))
    funcs = sorted(dict(funcs).items())  # one per address (aliases share code)
    total = sum(s for _, s in funcs)
    want = min(total, int(args.addresses * share)) if share else total  # fixtures: every byte
    chosen = set()
    if want >= total:
        chosen = {start + k for start, size in funcs for k in range(size)}
        want = len(chosen)
    cum = list(itertools.accumulate(s for _, s in funcs))
    while len(chosen) < want:
        # A uniformly random byte of function code.
        start, size = funcs[bisect.bisect_right(cum, rng.randrange(total))]
        chosen.add(start + rng.randrange(size))
    addresses[m] = sorted(chosen)
n = sum(len(a) for a in addresses.values())

tmp = tempfile.mkdtemp(prefix="symbolize-bench-")
synth = os.path.join(tmp, "synth.mscap")
with open(os.path.join(tmp, "addresses"), "w") as f:
    for m, addrs in addresses.items():
        for a in addrs:
            f.write("%s %x\n" % (m, a))
with open(os.path.join(tmp, "addresses")) as f:
    subprocess.run([MAKE, synth], stdin=f, check=True)
batches = {}
for m, addrs in addresses.items():
    batches[m] = "".join("0x%x\n" % a for a in addrs)


CACHE = os.path.join(tmp, "cache")


def run_microscope(*extra):
    out = os.path.join(tmp, "out.mscap")
    env = dict(os.environ, MICROSCOPE_CACHE_DIR=CACHE)
    subprocess.run([MICROSCOPE, "symbolize", "-q", synth, "-o", out, *extra], check=True, env=env)
    return out


def run_peer(tool):
    outputs = {}
    for m, (f, _) in modules.items():
        p = subprocess.run([tool, "-e", f, "-a", "-f", "-i", "-C"], input=batches[m],
                           capture_output=True, text=True, check=True)
        outputs[m] = p.stdout
    return outputs


def drop_caches():
    subprocess.run(["sync"])
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


tools = {"microscope": run_microscope,
         "ms --no-cache": lambda: run_microscope("--no-cache"),
         "eu-addr2line": lambda: run_peer("eu-addr2line"),
         "addr2line": lambda: run_peer("addr2line")}
can_drop = os.geteuid() == 0
times = {(t, c): [] for t in tools for c in ("warm", "cold")}
results = {}
for cache in (["warm", "cold"] if can_drop and not args.no_cold else ["warm"]):
    for r in range(args.runs):
        order = list(tools)
        rng.shuffle(order)
        for t in order:
            if cache == "cold":
                drop_caches()
            elif r == 0:
                tools[t]()  # warm the cache
            t0 = time.perf_counter()
            results[t] = tools[t]()
            times[(t, cache)].append(time.perf_counter() - t0)

CLONE = re.compile(r"\.(part|isra|constprop|cold|lto_priv|localalias)(\.\d+)*$")


def parse_peer(outputs, tool):
    chains = {}
    for m, text in outputs.items():
        cur = None
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            if re.match(r"^0x[0-9a-f]+$", lines[i]):
                cur = (m, int(lines[i], 16))
                chains[cur] = []
                i += 1
                continue
            func = lines[i].split(" inlined at ")[0]
            loc = lines[i + 1] if i + 1 < len(lines) else "??:0"
            loc = loc.split(" (discriminator")[0]
            mm = re.match(r"^(.*?):(\d+|\?)(?::\d+)?$", loc)
            file, line = (mm.group(1), mm.group(2)) if mm else ("", "")
            if line in ("0", "?") or file == "??":
                file, line = "", ""
            chains[cur].append(("" if func == "??" else func, file, line))
            i += 2
    return chains


def parse_ours(path):
    chains = {}
    out = subprocess.run([FRAMES, path], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split("\t")
        chains[(parts[0], int(parts[2], 16))] = [tuple(p.rsplit("|", 2)) for p in parts[3:]]
    return chains


def same(a, b):
    if len(a) != len(b):
        return False
    for k, ((af, afile, al), (bf, bfile, bl)) in enumerate(zip(a, b)):
        outer = k == len(a) - 1
        if al != bl or (al and afile != bfile):
            return False
        if af != bf and not (outer and (CLONE.sub("", af) == CLONE.sub("", bf) or not bf)):
            return False
    return True


ours = parse_ours(results["microscope"])
eu = parse_peer(results["eu-addr2line"], "eu")
bu = parse_peer(results["addr2line"], "bu")
keys = [(m, a) for m, addrs in addresses.items() for a in addrs]


def agreement(x, y):
    return sum(same(x.get(k, []), y.get(k, [])) for k in keys)


print("%d distinct addresses: %s" % (n, ", ".join("%s %d" % (os.path.basename(m), len(a))
                                                   for m, a in addresses.items())))
print("inline frames per address (ours): %.2f" % (sum(len(v) - 1 for v in ours.values()) / max(1, len(ours))))
print()
print("%-14s %-5s %10s %14s %9s" % ("tool", "cache", "median s", "addresses/s", "vs microscope"))
for cache in ("warm", "cold"):
    if not times[("microscope", cache)]:
        continue
    base = statistics.median(times[("microscope", cache)])
    for t in tools:
        med = statistics.median(times[(t, cache)])
        print("%-14s %-5s %10.3f %14.0f %8.1fx" % (t, cache, med, n / med, med / base))
print()
for name, other in (("eu-addr2line", eu), ("addr2line", bu)):
    a = agreement(ours, other)
    print("agreement with %-12s: %d of %d (%.2f%%)" % (name, a, n, 100.0 * a / n))
a = agreement(eu, bu)
print("eu-addr2line vs addr2line  : %d of %d (%.2f%%)" % (a, n, 100.0 * a / n))


def kind(a, b):
    """What differs: the frame count, a file:line, or only names."""
    if len(a) != len(b):
        return "number of frames (inlined calls)"
    if any(x[1:] != y[1:] for x, y in zip(a, b)):
        return "file:line"
    if a[-1][0] != b[-1][0] and a[:-1] == b[:-1]:
        return "outer function's name only"
    return "inlined function's name"


for name, other in (("eu-addr2line", eu), ("addr2line", bu)):
    kinds = {}
    for k in keys:
        if not same(ours.get(k, []), other.get(k, [])):
            kd = kind(ours.get(k, []), other.get(k, []))
            kinds[kd] = kinds.get(kd, 0) + 1
    print("differences from %s: %s" % (name, ", ".join("%s %d" % kv for kv in sorted(kinds.items()))))
shown = 0
for k in keys:
    if not same(ours.get(k, []), eu.get(k, [])) and shown < 8:
        print("  differs from eu-addr2line at %s 0x%x:\n    ours %s\n    eu   %s\n    bu   %s" % (
            os.path.basename(k[0]), k[1], ours.get(k), eu.get(k), bu.get(k)))
        shown += 1
