"""The stand-in runtime (tests/runtimes/toy), registered from its own room
(-Dtest_runtime=true, as scripts/build builds): a runtime that plugs in
through src/runtimes/runtime.h alone gets its flag (--toy), its BPF walk at
every stack (samples, off-CPU intervals, slow system calls), its frames
spliced in place of its interpreter's, and its source's settings.

The toy program runs main > outer > work_a (3 parts) and work_b (1 part), a
fixed amount of work, then sleeper() sleeps 20 x 10 ms in nanosleep."""
from common import *

require_perf()
d = tmpdir()
TOY = fixture("toy")


def toy_record(name, *extra):
    cap = os.path.join(d, name + ".mscap")
    p = run([MICROSCOPE, "record", "-q", "-F", "1999", "-o", cap, *extra, "--", TOY, "3000"],
            timeout=120)
    check(p.returncode == 0 and "toy: 3000 rounds" in p.stdout,
          "%s: the toy program recorded (%d): %s" % (name, p.returncode, p.stderr[-300:]))
    return cap


p = run([MICROSCOPE, "record", "--help"])
check("--toy" in p.stdout, "record --help lists the registered runtime's flag --toy")

# Samples: toy frames where toy_eval ran, in the toy's own call order.
cap = toy_record("on", "--toy", "bpf", "--off-cpu", "--syscalls", "--syscall-stack-min", "5ms")
rep = report(cap, "--min-percent", "0")
toy = rep["header"]["sources"].get("toy", {})
check(toy.get("state") == "on" and toy["values"].get("walks", 0) > 500,
      "the capture says the toy source was on, with its walks: %s" % toy)
paths = tree_paths(report(cap, "--tree", "--min-percent", "0"))
def under(fn):
    return sum(v for p, v in paths.items() if p[-1] == fn)
a, b = under("work_a"), under("work_b")
chain = sum(v for p, v in paths.items() if p[-3:] == ("main", "outer", "work_a"))
check(a + b > 1000 and abs(a / (a + b) - 0.75) <= 0.05,
      "work_a %.1f%% of work_a + work_b (%d samples; want 75 +- 5)" % (100 * a / max(1, a + b), a + b))
check(chain >= 0.95 * a, "main > outer > work_a in %d of work_a's %d samples" % (chain, a))
# A sample before the recorder laid the process out (its mapping record is
# read after the program started) has no walk: toy_eval stays there only.
left = functions(rep).get("toy_eval", (0, 0))[1]
check(left <= toy["values"]["stacks_without_walk"] and left < 0.05 * rep["header"]["samples"],
      "toy_eval left in %d samples, those before the process was laid out (%d stacks)" %
      (left, toy["values"]["stacks_without_walk"]))

# Blocked time and slow system calls carry the toy frames of the moment.
off = {f["function"]: f["total"]["value"] for f in
       report(cap, "--metric", "offcpu", "--min-percent", "0")["functions"]}
check(off.get("sleeper", 0) >= 150e6,
      "off CPU under sleeper() %.0f ms (200 by design)" % (off.get("sleeper", 0) / 1e6))
slow = report(cap, "--syscalls")["syscalls"]["slowest"]
check(any("sleeper" in c["stack"] and c["syscall"] == "clock_nanosleep" for c in slow),
      "slow nanosleeps name their toy caller: %s" % [c["stack"][-3:] for c in slow[:2]])

# --toy off: the interpreter's own frames, no toy ones.
rep = report(toy_record("off", "--toy", "off"), "--min-percent", "0")
names = {f["function"] for f in rep["functions"]}
check("toy_eval" in names and "work_a" not in names,
      "--toy off: toy_eval's frames stay, no toy frame (%s)" % sorted(names)[:8])
