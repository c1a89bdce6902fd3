"""Interpreted stacks deeper than the walk's default bound (1,024 frames):
a Python stack 1,500 calls deep (CPython 3.13) and a JavaScript stack 1,100
calls deep (Node 22), each doing a fixed amount of work at the bottom and
then sleeping 20 times (tests/fixtures/python/deep.py, node/deep.js).

With the default bound every walk is cut at 1,024 frames: the header says
the bound and how many walks were cut, and each cut stack ends with a
marker naming the bound and the option. With --runtime-frames at its
largest (2,045 Python, 1,168 JavaScript frames) no walk is cut and the
outermost function is in the samples of the bottom one, and in its
off-CPU intervals and slow system calls, whose events carry walks of that
size beside their stacks (bpf/stack_copy.h)."""
from common import *

require_perf()
d = tmpdir()
FIXTURES_DIR = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "fixtures"))
python = fetch_pythons(("3.13",))["3.13"]
node = fetch_nodes()["22"]
CASES = [("python", [python, os.path.join(FIXTURES_DIR, "python", "deep.py"), "1500", "4000000"],
          2045, "Python"),
         # Without inlining: an optimized down() could take bottom() into its
         # own code when V8 compiles it before the call (as a loaded machine
         # lets it), and inlined functions are not frames of their own yet.
         ("node", [node, "--no-turbo-inlining", "--no-maglev-inlining",
                   os.path.join(FIXTURES_DIR, "node", "deep.js"), "1100", "150000000"],
          1168, "JavaScript")]


def source(rep, name):
    return rep["header"]["sources"][name]


def under_bottom(cap):
    """(samples whose stack has bottom, those of them that also have
    outermost), from the folded stacks (the report's tree is too deep for
    this interpreter's recursion)."""
    folded = cap + ".folded"
    p = run([MICROSCOPE, "convert", cap, "--to", "folded", "-o", folded])
    check(p.returncode == 0, "convert %s to folded: %s" % (cap, p.stderr.strip()))
    bottom = outer = 0
    for line in open(folded):
        stack, n = line.rsplit(" ", 1)
        names = stack.split(";")
        if "bottom" in names:
            bottom += int(n)
            outer += int(n) if "outermost" in names else 0
    return bottom, outer


for name, command, most, frames in CASES:
    cap = os.path.join(d, name + "-default.mscap")
    p = record(cap, command, ["--%s" % name, "bpf"])
    check("deep done" in p.stdout, "%s: the fixture ran (%s)" % (name, p.stdout.strip()))
    rep = report(cap, "--top", "10000")
    s = source(rep, name)["values"]
    fn = functions(rep)
    bottom, outer = under_bottom(cap)
    said = "cut at 1024 %s frames (record --runtime-frames)]" % frames
    marked = sum(t for f, (_, t) in fn.items() if f.startswith("[unknown %s: " % frames) and f.endswith(said))
    check(s["frame_bound"] == 1024 and bottom >= 50 and s["walks_cut"] >= 0.9 * bottom and
          marked >= 0.9 * bottom and outer == 0,
          "%s: by default walks are cut at 1,024 frames, said in the header (%s) and by a marker "
          "(%d of %d samples in bottom)" % (name, s, marked, bottom))

    cap = os.path.join(d, name + "-most.mscap")
    record(cap, command, ["--%s" % name, "bpf", "--runtime-frames", str(most), "--off-cpu",
                          "--syscalls", "--syscall-stack-min", "1ms"])
    s = source(report(cap), name)["values"]
    bottom, outer = under_bottom(cap)
    check(s["frame_bound"] == most and s["walks_cut"] == 0 and bottom >= 50 and outer >= 0.95 * bottom,
          "%s: with --runtime-frames %d no walk is cut and outermost is under %d of %d samples in "
          "bottom (%s)" % (name, most, outer, bottom, s))
    off = functions(report(cap, "--metric", "offcpu", "--top", "10000"))
    check(off.get("outermost", (0, 0))[1] >= 18 and off.get("bottom", (0, 0))[1] >= 18,
          "%s: the 20 sleeps' off-CPU intervals have the whole stack: outermost %s, bottom %s"
          % (name, off.get("outermost"), off.get("bottom")))
    calls = report(cap, "--syscalls", "--top", "1000")["syscalls"]["slowest"]
    whole = sum(1 for c in calls if "outermost" in c["stack"] and "bottom" in c["stack"])
    check(whole >= 18, "%s: %d of %d slow system calls have the whole stack" % (name, whole, len(calls)))

# Activations deeper than the stack copy: 200 levels called through C
# (map), each an eval loop activation on the native stack, which the 16 KiB
# copy does not reach. The activations past the unwind's end follow the
# native frames after a marker saying how many, and keep their callers: in
# the Python look each stack in bottom roots at <module> as a whole one does.
cap = os.path.join(d, "python-through-c.mscap")
p = record(cap, CASES[0][1][:2] + ["200", "4000000", "c"], ["--python", "bpf"])
check("deep done" in p.stdout, "through C: the fixture ran (%s)" % p.stdout.strip())
folded = cap + ".folded"
run([MICROSCOPE, "convert", cap, "--to", "folded", "--look", "python", "-o", folded])
roots, gaps, total = {}, 0, 0
for line in open(folded):
    stack, n = line.rsplit(" ", 1)
    names = stack.split(";")
    if "bottom" not in names:
        continue
    total += int(n)
    roots[names[0]] = roots.get(names[0], 0) + int(n)
    gaps += int(n) if any(f.endswith("Python activations not found in the native stack]")
                         for f in names) else 0
check(total >= 50 and roots.get("<module>", 0) >= 0.99 * total and gaps >= 0.9 * total,
      "through C: %d of %d samples in bottom root at <module> in the Python look (roots %s), "
      "%d with the gap's marker" % (roots.get("<module>", 0), total,
                                    dict(sorted(roots.items(), key=lambda kv: -kv[1])[:3]), gaps))

bad = run([MICROSCOPE, "record", "-q", "-o", os.path.join(d, "x.mscap"), "--runtime-frames", "2046",
           "--", "/bin/true"])
check(bad.returncode != 0 and "--runtime-frames" in bad.stderr,
      "a bound past the walk's room is refused: %s" % bad.stderr.strip())
