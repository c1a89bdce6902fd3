"""JIT code named at record time through perf maps (/tmp/perf-PID.map),
jitdump files and the GDB JIT interface: a tiny C JIT
(tests/fixtures/jit.c) that writes a map, a jitdump or registers an
in-memory ELF object, and node --perf-basic-prof with the V8 walker off. Each named range is a frame of a
module of its own (the map), under the native code that calls it; a map
another user owns, or one last written before its process started, is
refused with the reason in the capture's notes."""
import glob
from collections import Counter

from common import *

require_perf()
d = tmpdir()


def record_jit(mode, extra=()):
    cap = os.path.join(d, mode + ".mscap")
    p = run([MICROSCOPE, "record", "-q", "-o", cap, *extra, "--", fixture("jit"), mode, "20000"],
            timeout=120)
    pid = p.stdout.split()[-1] if p.stdout.strip() else ""
    for left in ("/tmp/perf-%s.map" % pid, "/tmp/jit-%s.dump" % pid):
        if pid.isdigit() and os.path.exists(left):
            os.unlink(left)
    check(p.returncode == 0, "record jit %s: %s" % (mode, p.stderr[-500:]))
    return cap, pid


cap, pid = record_jit("perfmap")
rep = report(cap, "--tree", "--min-percent", "0")
fns = {f["function"]: f for f in rep["functions"]}
n = rep["header"]["samples"]
spin = fns.get("jit_spin")
check(spin is not None and spin["self"]["samples"] > 0.8 * n and
      spin["module"] == "perf-%s.map" % pid,
      "jit_spin named by the map, a module of its own, in %s of %d samples (module %s)" %
      (spin and spin["self"]["samples"], n, spin and spin["module"]))
paths = tree_paths(rep)
under_main = sum(v for p, v in paths.items() if p[-1] == "jit_spin" and "main" in p)
check(under_main > 0.95 * spin["total"]["samples"],
      "the JIT frame sits under main, which calls it (%d of %d)" % (under_main, spin["total"]["samples"]))

def cfi_unwound(rep, fn, what):
    """The frameless JIT code (CFI its JIT gave, nothing else, under -g
    dwarf) unwound to main: complete stacks with main right under it."""
    paths = tree_paths(rep)
    total = sum(v for p, v in paths.items() if p[-1] == fn)
    under = sum(v for p, v in paths.items() if p[-2:] == ("main", fn))
    ends = rep["header"]["stack_ends"]
    check(total > 0 and under > 0.95 * total and ends["complete"] > 0.95 * rep["header"]["samples"],
          "%s: %s unwound by its CFI, right under main in %d of %d samples (stack ends %s)" %
          (what, fn, under, total, {k: v for k, v in ends.items() if v}))


# A jitdump the JIT maps names its code, and its unwinding information
# record unwinds it.
cap, pid = record_jit("jitdump", ("-g", "dwarf"))
rep = report(cap, "--tree", "--min-percent", "0")
spin = {f["function"]: f for f in rep["functions"]}.get("jit_spin_dump")
n = rep["header"]["samples"]
check(spin is not None and spin["self"]["samples"] > 0.8 * n and spin["module"] == "jit-%s.dump" % pid,
      "jit_spin_dump named by the jitdump, a module of its own, in %s of %d samples (module %s)" %
      (spin and spin["self"]["samples"], n, spin and spin["module"]))
cfi_unwound(rep, "jit_spin_dump", "jitdump")

# An object registered through the GDB JIT interface names its code, and
# its .eh_frame unwinds it.
cap, pid = record_jit("gdb", ("-g", "dwarf"))
rep = report(cap, "--tree", "--min-percent", "0")
spin = {f["function"]: f for f in rep["functions"]}.get("jit_spin_gdb")
n = rep["header"]["samples"]
check(spin is not None and spin["self"]["samples"] > 0.8 * n and spin["module"].startswith("[jit object 0x"),
      "jit_spin_gdb named by the registered object, a module of its own, in %s of %d samples (%s)" %
      (spin and spin["self"]["samples"], n, spin and spin["module"]))
cfi_unwound(rep, "jit_spin_gdb", "GDB JIT object")

for mode, why in (("foreign", "owned by uid 65534"), ("stale", "before its process started")):
    cap, pid = record_jit(mode)
    rep = report(cap, "--min-percent", "0")
    named = [f for f in rep["functions"] if f["function"] == "jit_spin"]
    notes = [x for x in rep["header"]["notes"] if "perf map refused" in x]
    check(not named and notes and why in notes[0],
          "%s map refused, its code left unnamed: %s" % (mode, notes))

# node --perf-basic-prof, the V8 walker off: the map names the JIT code.
cap = os.path.join(d, "node.mscap")
workload = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "fixtures", "node", "workload.js"))
before = set(glob.glob("/tmp/perf-*.map"))
p = run([MICROSCOPE, "record", "-q", "--node", "off", "-o", cap, "--", "node", "--perf-basic-prof",
         workload, "shares", "1"], timeout=300, cwd=d)  # node's V8 logs go there
for m in set(glob.glob("/tmp/perf-*.map")) - before:
    os.unlink(m)
check(p.returncode == 0, "record node --perf-basic-prof: %s" % p.stderr[-300:])
rep = report(cap, "--min-percent", "0")
fns = functions(rep)
# V8's generated code keeps frame pointers: marked so with the walker off
# too, the stacks unwind through it (before, 705 of 767 ended at the first
# perf-map frame with no unwind information).
ends = rep["header"]["stack_ends"]
check(ends["complete"] > 0.95 * rep["header"]["samples"],
      "node's stacks unwind through its JIT code with the walker off: %d of %d complete (%s)" %
      (ends["complete"], rep["header"]["samples"], ends))
js = {name: s for name, (s, t) in fns.items() if name.startswith("JS:") and
      any(name.split(" ")[0].endswith(fn) for fn in ("leaf", "mid", "top"))}
total = sum(js.values())
leaf = sum(s for name, s in js.items() if name.split(" ")[0].endswith("leaf"))
# leaf()'s share of the named samples follows V8's tiering of the three
# functions: 0.57-0.62 on an idle machine, 0.79 once in CI.
check(total > 0.8 * sum(s for s, t in fns.values()) and 0.4 < leaf / total < 0.85,
      "node's perf map names its JIT code: %d samples in leaf/mid/top (leaf %.0f%%)" %
      (total, 100 * leaf / max(1, total)))

# node --perf-prof: its jitdump (in its working directory, mapped) names the
# JIT code.
cap = os.path.join(d, "node-jitdump.mscap")
p = run([MICROSCOPE, "record", "-q", "--node", "off", "-o", cap, "--", "node", "--perf-prof", workload,
         "shares", "1"], timeout=300, cwd=d)
check(p.returncode == 0, "record node --perf-prof: %s" % p.stderr[-300:])
rep = report(cap, "--min-percent", "0")
named = {f["function"]: f for f in rep["functions"] if f["module"].startswith("jit-") and
         f["module"].endswith(".dump")}
fns = [f for name, f in named.items() if any(name.split(" ")[0].endswith(x) for x in ("leaf", "mid", "top"))]
total = sum(f["self"]["samples"] for f in fns)
# Not all: node writes its jitdump through a buffer, and a sample whose code
# is not in the file yet when it is processed stays unnamed (8-18% of the
# samples here, more on a loaded machine).
check(total > 0.6 * rep["header"]["samples"],
      "node's jitdump names its JIT code: %d of %d samples in leaf/mid/top (%s)" %
      (total, rep["header"]["samples"], sorted(named)[:3]))

# CPython's perf trampolines (-X perf): one per Python function, named by
# the perf map. 3.13's keep no frame pointer (3.14's push one); under -g
# dwarf only the rules proven from their code unwind through them, down to
# the Python function that called, and on to main. -X perf_jit: the
# jitdump's unwinding information does. CPython writes that jitdump through
# stdio, on disk 4 KiB at a time (and at exit): the script first runs its
# functions once, then 400 others whose records push theirs out to the file
# before the timed work. The rules are proven from the trampolines' code,
# read while the process lives: the recorder processes samples 50-110 ms
# after they are taken, so the script sleeps half a second at its end. The
# Python walker is off: the trampolines alone give the Python functions.
PY = """
def leaf(n):
    s = 0
    for i in range(n):
        s += i
    return s
def mid(n):
    return leaf(n) + leaf(n // 2)
def top(times):
    for _ in range(times):
        mid(200000)
top(0)
mid(1)
for k in range(400):
    exec("def filler_%d(): return %d" % (k, k))
    globals()["filler_%d" % k]()
top(30)
import time
time.sleep(0.5)
"""
script = os.path.join(d, "trampolines.py")
with open(script, "w") as f:
    f.write(PY.replace("time.sleep(0.5)", "time.sleep(%g)" % (0.5 * LAG_FACTOR)))
for version, python in fetch_pythons(("3.13", "3.14")).items():
    for flag in ("perf", "perf_jit"):
        cap = os.path.join(d, "py%s-%s.mscap" % (version, flag))
        before = set(glob.glob("/tmp/perf-*.map") + glob.glob("/tmp/jit-*.dump"))
        p = run([MICROSCOPE, "record", "-q", "--python", "off", "-g", "dwarf", "-o", cap, "--",
                 python, "-X", flag, script], timeout=300, cwd=d)
        for left in set(glob.glob("/tmp/perf-*.map") + glob.glob("/tmp/jit-*.dump")) - before:
            os.unlink(left)
        check(p.returncode == 0, "record python%s -X %s: %s" % (version, flag, p.stderr[-300:]))
        rep = report(cap)
        n = rep["header"]["samples"]
        ends = rep["header"]["stack_ends"]
        folded = os.path.join(d, "py%s-%s.folded" % (version, flag))
        run([MICROSCOPE, "convert", cap, "--to", "folded", "-o", folded])
        chains = Counter()
        for line in open(folded):
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            path = stack.split(";")
            py = tuple("py::" + f.split(":")[2] for f in path if f.startswith("py::"))
            if "py::leaf" in py:
                chains[py[-3:] == ("py::top", "py::mid", "py::leaf") and path[0] == "_start"] += int(count)
        check(ends["complete"] > 0.9 * n and chains[True] > 0.95 * sum(chains.values()) > 0.3 * n,
              "python%s -X %s: stacks unwound through the trampolines: py::top > py::mid > py::leaf "
              "from _start in %d of %d samples in leaf; %d of %d complete (%s)" %
              (version, flag, chains[True], sum(chains.values()), ends["complete"], n,
               {k: v for k, v in ends.items() if v}))
