"""Launch the split fixture (70% hot, 30% cold by work) and check the split,
the caller chains, the sample count, and the exit status. The sample count
is held to the fixture's own CPU time (it prints it), not to the wall time:
on a loaded machine the program waits for a CPU, and cpu-clock samples only
the time it runs."""
import re

from common import *

def check_split(rep, end, cpu_s):
    h = rep["header"]
    fn = functions(rep)
    # Totals: hot's own time includes burn_units, inlined into it.
    hot, cold = fn["hot"][1], fn["cold"][1]
    share = hot / (hot + cold)
    check(0.60 <= share <= 0.80, "hot has %.1f%% of hot+cold (work split 70%%)" % (100 * share))
    expected = cpu_s * h["frequency"]
    check(h["samples"] >= 0.8 * expected,
          "%d samples for the fixture's %.2f s of CPU at %d Hz (expected ~%d, at least 80%%)" %
          (h["samples"], cpu_s, h["frequency"], expected))
    check(h["mode"] == "launch" and len(h["processes"]) == 1, "one launched process")
    check(h["processes"][0]["command"] == "split", "process named split")
    check(h["processes"][0]["exit_status"] == 0, "exit status recorded")
    check(h["threads"][0]["name"] == "split", "thread named split")
    in_chain = samples_under_chain(rep, ["main", "run", "hot"])
    check(in_chain >= 0.95 * fn["hot"][1], "hot is reached through main > run in %d of %d samples" % (in_chain, fn["hot"][1]))
    check(samples_under_chain(rep, ["main", "run", "cold"]) >= 0.95 * fn["cold"][1], "cold through main > run")
    check(h["lost_records"] == 0 and h["lost_samples"] == 0, "nothing lost")
    check(h["fully_named_samples"] >= 0.95 * h["samples"],
          "%d of %d samples have fully named stacks" % (h["fully_named_samples"], h["samples"]))
    check(h["stack_ends"][end] >= 0.95 * h["samples"], "stacks end with %s: %d of %d" % (end, h["stack_ends"][end], h["samples"]))


require_perf()
d = tmpdir()
# Frame pointers (the kernel's chain) and the default (auto: CFI unwinding of
# the copied stack) must agree on this frame-pointer build.
for mode, end in (("fp", "frame-pointer-end"), ("auto", "complete")):
    print("-- call graph", mode)
    out = d + "/split-%s.mscap" % mode
    p = record(out, [fixture("split"), "1200"], ["-g", mode])
    cpu_s = float(re.search(r"cpu_s=([0-9.]+)", p.stdout).group(1))
    rep = report(out, "--tree", "--min-percent", "0")
    check_split(rep, end, cpu_s)
# The program's exit status is record's exit status.
p = record(d + "/status.mscap", [fixture("split"), "5", "3"], expect_rc=3)
check(p.returncode == 3, "record exits with the program's status (3)")

# Deterministic output: the same capture gives the same report, byte for byte.
a = run([MICROSCOPE, "report", "--tree", out]).stdout
b = run([MICROSCOPE, "report", "--tree", out]).stdout
check(a == b and "hot [split]" in a, "report output is deterministic")
check(run([MICROSCOPE, "report", "--json", "--tree", out]).stdout == run([MICROSCOPE, "report", "--json", "--tree", out]).stdout,
      "JSON output is deterministic")
