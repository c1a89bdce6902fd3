"""Three named threads with fixed work 1:2:3: thread names, per-thread
sample ratios, and each worker function reached from its thread start."""
from common import *

require_perf()
d = tmpdir()
out = d + "/threads.mscap"
record(out, [fixture("threads"), "700"])
rep = report(out, "--tree", "--min-percent", "0")
threads = {t["name"]: t["samples"] for t in rep["header"]["threads"]}
for name in ("worker-a", "worker-b", "worker-c"):
    check(name in threads, "thread %s present (threads: %s)" % (name, sorted(threads)))
a, b, c = threads["worker-a"], threads["worker-b"], threads["worker-c"]
check(a > 20, "worker-a has %d samples" % a)
check(1.5 <= b / a <= 2.6, "worker-b/worker-a = %.2f (work ratio 2)" % (b / a))
check(2.2 <= c / a <= 3.9, "worker-c/worker-a = %.2f (work ratio 3)" % (c / a))
fn = functions(rep)
for t, w in (("thread_a", "work_a"), ("thread_b", "work_b"), ("thread_c", "work_c")):
    n = samples_under_chain(rep, [t, w])
    check(n >= 0.95 * fn[w][1], "%s reached from %s in %d of %d samples" % (w, t, n, fn[w][1]))
    starts = samples_under_chain(rep, ["start_thread", t, w])
    check(starts >= 0.9 * fn[w][1], "%s > %s under start_thread (%d)" % (t, w, starts))
check(len(rep["header"]["processes"]) == 1, "one process")
