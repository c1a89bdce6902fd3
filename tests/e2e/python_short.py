"""Python code that dies young is named: the walk copies each code object
the first time it meets it (py_code_snapshot), so a module's body freed
after its import, functions compiled, run once and dropped, and child
processes that exit within 30 ms are named from what the walk saw, on
Debian's 3.11 and on 3.13, 3.14 and 3.15 (tests/fixtures/python/short.py,
about 0.2 s of work). The children exec the parent's interpreter, which BPF
lays out at the exec: their first samples are walked. The program is
launched through a shell script that execs the interpreter, as wrappers
do: the walker is on from the start (the launched program is a script) and
holds the interpreter at its exec until it is laid out, so its first
samples are walked too.

Of the Python frames of each recording, at most 0.5% may be unnamed for a
reason of naming (not a code object, changed since the walk, unreadable,
process exited before it was read), at most 1% for any reason; each young
module's function, each compiled function and each child's function is
named. A program that execs its own interpreter keeps its names: the
samples it took just before the exec are processed after the recorder has
laid the process out afresh (tests/fixtures/python/reexec.py). Ten such
programs in one recording, under a --target-memory a few of
them fill, keep every copy (an ended process's are given back), and the
last program's young modules are named."""
import re

from common import *

require_perf()
pythons = {"3.11": "/usr/bin/python3.11"}
pythons.update(fetch_pythons())
SHORT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                      "python", "short.py"))
d = tmpdir()
NAMING = ("not a code object", "changed since the walk", "unreadable", "exited before")

for version, python in sorted(pythons.items()):
    work = os.path.join(d, version)
    os.makedirs(work)
    cap = os.path.join(d, "short-%s.mscap" % version)
    wrapper = os.path.join(d, "run-%s.sh" % version)
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nexec "%s" "%s" "$@"\n' % (python, SHORT))
    os.chmod(wrapper, 0o755)
    p = record(cap, [wrapper, work])
    check("short done" in p.stdout, "%s: the fixture ran (%s)" % (version, p.stdout.strip()))
    rep = report(cap, "--top", "100000", "--min-percent", "0")
    s = rep["header"]["sources"]["python"]["values"]
    fn = functions(rep)
    unnamed = {f: t for f, (_, t) in fn.items()
               if f.startswith("[unknown Python: ") and any(r in f for r in NAMING)}
    frames = s["frames"] + s["unknown_frames"]
    check(frames > 500 and sum(unnamed.values()) <= 0.005 * frames and s["code_snapshots"] > 50,
          "%s: %d of %d Python frames unnamed for naming's sake (%s); %d code objects copied by "
          "the walks, %d named from them" % (version, sum(unnamed.values()), frames, unnamed,
                                             s["code_snapshots"], s["codes_named_from_snapshots"]))
    # The children exec the interpreter the parent runs: laid out at their
    # exec (py_images), so their first samples are walked too.
    early = {f: t for f, (_, t) in fn.items() if "before the walker was on" in f}
    check(s["unknown_frames"] <= 0.01 * frames and not early and s["execs_held"] >= 1,
          "%s: %d of %d Python frames unknown for any reason (before the walker was on: %s); "
          "%d execs held until laid out" % (version, s["unknown_frames"], frames, early,
                                            s["execs_held"]))
    young = [f for f in fn if re.fullmatch(r"spin_\d+", f)]
    compiled = [f for f in fn if re.fullmatch(r"compiled_\d+", f)]
    check(len(young) >= 15 and len(compiled) >= 5 and fn.get("child_work", (0, 0))[1] > 0,
          "%s: young modules' functions named: %d of 20, compiled ones %d of 10, child_work %s"
          % (version, len(young), len(compiled), fn.get("child_work")))

    # Each activation of the eval loop is named, where the interpreter's
    # symbols name its code or not (Debian's 3.14 and 3.15 split parts of
    # the loop out of _PyEval_EvalFrameDefault's symbol, leaving them
    # unnamed): the native frame directly calling a Python frame.
    tree = report(cap, "--tree", "--min-percent", "0")
    callers = {}
    python = lambda n: n["module"].endswith(".py") or n["module"].startswith("<frozen ")

    # A marker's Python frames (activations the native stack did not reach)
    # have no native caller.
    def walk(node, parent):
        if python(node) and parent is not None and not python(parent) and \
                not parent["function"].startswith("[unknown Python"):
            callers[parent["function"]] = callers.get(parent["function"], 0) + node["total"]["samples"]
        for c in node["children"]:
            walk(c, node)

    for r in tree["tree"]:
        walk(r, None)
    loop = {f: n for f, n in callers.items() if f.startswith("_PyEval_EvalFrameDefault")}
    check(sum(callers.values()) > 100 and loop and sum(loop.values()) >= 0.99 * sum(callers.values()),
          "%s: Python frames are called by the eval loop, named: %s" % (version, callers))

# A program that execs its interpreter again: the samples it took in the
# last round before its exec are processed after the exec has laid the
# process out afresh. Each code object's copy was given back when it was
# named, so what it named must stay across the layout. Before, those
# samples were named from the new program's memory: on 3.13, 19 to 25
# samples had an "[unknown Python: code object unreadable]" frame, and on
# 3.11 29 of 517 Python frames were unnamed.
REEXEC = os.path.join(os.path.dirname(SHORT), "reexec.py")
for version, python in sorted(pythons.items()):
    cap = os.path.join(d, "reexec-%s.mscap" % version)
    p = record(cap, [python, REEXEC])
    rep = report(cap, "--top", "100000", "--min-percent", "0")
    s = rep["header"]["sources"]["python"]["values"]
    fn = functions(rep)
    frames = s["frames"] + s["unknown_frames"]
    unnamed = {f: t for f, (_, t) in fn.items()
               if f.startswith("[unknown Python: ") and any(r in f for r in NAMING)}
    check("reexec done" in p.stdout and fn.get("before_exec", (0, 0))[1] >= 30 and
          fn.get("after_exec", (0, 0))[1] >= 10 and sum(unnamed.values()) <= 0.005 * frames,
          "%s: across an exec of the interpreter, before_exec %s and after_exec %s named; "
          "%d of %d Python frames unnamed for naming's sake (%s)"
          % (version, fn.get("before_exec"), fn.get("after_exec"), sum(unnamed.values()), frames,
             unnamed))

# Many short programs in one recording, under a --target-memory a few of
# them would fill: what the recorder keeps for a process (the walks' copies
# of its code objects) is given back when it ends, so the last program's
# young code is named from its copies as the first one's was. Before, the
# copies of every program that had ended stayed counted, and the later
# programs' copies were refused.
RUNS = 10
# Each program's copies fit in 512K here (1,800-1,900 copies in all); all
# ten are 4M: before, at 1M, 1,159 of them were refused.
TARGET_MEMORY = "1M"
newest = max(pythons, key=lambda v: tuple(int(x) for x in v.split(".")))
script = os.path.join(d, "many.sh")
with open(script, "w") as f:
    f.write('#!/bin/sh\nfor i in $(seq %d); do mkdir -p "%s/many-$i" && "%s" "%s" "%s/many-$i" || exit 1; '
            'done\n' % (RUNS, d, pythons[newest], SHORT, d))
os.chmod(script, 0o755)
cap = os.path.join(d, "many.mscap")
p = record(cap, [script], ["--target-memory", TARGET_MEMORY])
check(p.stdout.count("short done") == RUNS, "%s: %d short programs ran in one recording" %
      (newest, p.stdout.count("short done")))
rep = report(cap, "--top", "100000", "--min-percent", "0")
refused = [l["text"] for l in rep["header"]["lines"] if "not kept" in l["text"]]
young = {f["function"] for f in rep["functions"]
         if re.fullmatch(r"spin_\d+", f["function"]) and "/many-%d/" % RUNS in f["module"]}
s = rep["header"]["sources"]["python"]["values"]
check(not refused and len(young) >= 15,
      "%s: under --target-memory %s, %d programs' copies kept (%d code objects), none refused "
      "(%s); the last program's young modules named: %d of 20" %
      (newest, TARGET_MEMORY, RUNS, s["code_snapshots"], refused, len(young)))
