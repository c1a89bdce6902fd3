"""Names as users know them: a program spending its time in glibc's
allocator is reported with malloc and free (the names libc exports as their
default version, the ones a user types in --focus), not the DWARF's
__GI___libc_malloc or the compatibility alias cfree; `symbolize` later gives
the same names as naming at record time."""
from common import *

require_perf()
d = tmpdir()

now = d + "/now.mscap"
record(now, [fixture("alloc"), "30000000"])
rep = report(now, "--flat", "--top", "50")
fn = functions(rep)
total = rep["header"]["samples"]
check(total > 100, "%d samples" % total)
for name in ("malloc", "free"):
    check(name in fn and fn[name][1] > 0, "%s is named so: %s" % (name, sorted(fn)))
for internal in ("__GI___libc_malloc", "__GI___libc_free", "__libc_malloc", "__libc_free", "cfree"):
    check(internal not in fn, "no frame named %s" % internal)
focused = functions(report(now, "--focus", "^malloc$"))
check(focused.get("malloc", (0, 0))[1] >= fn["malloc"][1] > 0,
      "report --focus '^malloc$' keeps malloc's %d samples" % fn["malloc"][1])
check(samples_under_chain(report(now, "--tree", "--min-percent", "0"), ["churn", "malloc"]) > 0,
      "churn > malloc in the call tree")

later = d + "/later.mscap"
record(later, [fixture("alloc"), "30000000"], ["--symbolize", "later"])
named = d + "/named.mscap"
p = run([MICROSCOPE, "symbolize", later, "-o", named])
check(p.returncode == 0, "symbolize: %s" % p.stderr)
fn_later = functions(report(named, "--flat", "--top", "50"))
check("malloc" in fn_later and "free" in fn_later, "symbolize names malloc and free too: %s" % sorted(fn_later))
