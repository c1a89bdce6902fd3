"""A parent that forks a child which execs the split fixture: both
processes recorded, the child's name after exec, its frames from the new image."""
from common import *

require_perf()
d = tmpdir()
out = d + "/forkexec.mscap"
record(out, [fixture("forkexec"), fixture("split"), "300"])
rep = report(out, "--tree", "--min-percent", "0")
procs = rep["header"]["processes"]
check(len(procs) == 2, "two processes: %s" % [(p["pid"], p["command"]) for p in procs])
parent = [p for p in procs if p["command"] == "forkexec"]
child = [p for p in procs if p["command"] == "split"]
check(len(parent) == 1 and len(child) == 1, "parent forkexec and child split")
check(child[0]["parent_pid"] == parent[0]["pid"], "child's parent pid is the launched process")
check(child[0]["samples"] > 50 and parent[0]["samples"] > 50,
      "both processes sampled (parent %d, child %d)" % (parent[0]["samples"], child[0]["samples"]))
fn = functions(rep)
check(fn["parent_work"][1] >= 0.9 * parent[0]["samples"], "parent's samples in parent_work")
check(samples_under_chain(rep, ["main", "run", "hot"]) > 0, "child's hot reached via main > run")
names = {t["name"] for t in rep["header"]["threads"]}
check({"forkexec", "split"} <= names, "thread names forkexec and split: %s" % sorted(names))
# Frames of the child after exec must come from the split binary, not the parent's mappings.
hot_modules = {f["module"] for f in rep["functions"] if f["function"] == "hot"}
check(hot_modules == {"split"}, "hot is in module split: %s" % hot_modules)

# Every process that exited has its exit status, not only the launched one
# (BPF on sched_process_exit): a normal exit, a kill, and the program's own.
out = d + "/exits.mscap"
record(out, ["sh", "-c", 'sh -c "exit 3"; sh -c "kill -9 \\$\\$"; exit 5'], expect_rc=5)
procs = {p["pid"]: p for p in report(out)["header"]["processes"]}
statuses = sorted(p.get("exit_status") for p in procs.values())
check(statuses == [3, 5, 137], "exit statuses 3, 137 (SIGKILL) and 5: %s" % statuses)
