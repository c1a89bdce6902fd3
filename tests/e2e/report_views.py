"""report's views and filters on captures shaped like recordings of the
threads and split fixtures (built without perf, tests/tools/capture_make.cc): --inverted, --threads,
--lanes, --focus/--exclude/--thread/--time/--pid, --granularity, --diff of two
recordings whose hot function changes, colors on a terminal only."""
from common import *

d = tmpdir()
threads = d + "/threads.mscap"
make_capture(threads, "threads")

# --thread keeps one thread's samples; by name and by tid agree.
rep = report(threads, "--thread", "worker-a")
fn = functions(rep)
check(fn.get("work_a", (0, 0))[1] > 0 and "work_b" not in fn and "work_c" not in fn,
      "--thread worker-a: work_a's samples only: %s" % fn)
tid = [t["tid"] for t in rep["header"]["threads"] if t["name"] == "worker-a"][0]
check(report(threads, "--thread", str(tid))["all"] == rep["all"], "--thread by tid equals by name")

# --focus and --exclude.
all_samples = report(threads)["all"]["samples"]
b = report(threads, "--focus", "^work_b$")["all"]["samples"]
no_c = report(threads, "--exclude", "work_c")["all"]["samples"]
c_only = report(threads, "--focus", "work_c")["all"]["samples"]
check(0 < b < all_samples, "--focus work_b keeps %d of %d" % (b, all_samples))
check(no_c + c_only == all_samples, "--exclude and --focus of one function split the samples (%d + %d = %d)" % (no_c, c_only, all_samples))

# --time: the first and the second half partition the samples.
dur = report(threads)["header"]["duration_ns"]
half = "%dns" % (dur // 2)
first = report(threads, "--time", ".." + half)["all"]["samples"]
second = report(threads, "--time", "%dns.." % (dur // 2 + 1))["all"]["samples"]
check(first > 0 and second > 0 and first + second == all_samples,
      "--time halves: %d + %d = %d" % (first, second, all_samples))

# --inverted: sampled functions at the roots, their callers below.
inv = report(threads, "--inverted", "--min-percent", "0")["inverted"]
roots = {r["function"]: r for r in inv}
# burn_units, inlined into each worker, is where the samples are.
check("burn_units" in roots, "inverted roots include burn_units: %s" % sorted(roots))
callers = {c["function"]: c for c in roots["burn_units"]["children"]}
check({"work_a", "work_b", "work_c"} <= set(callers), "burn_units' callers are the workers: %s" % sorted(callers))
check(callers["work_c"]["children"][0]["function"] == "thread_c", "work_c's caller is thread_c")

# --threads: per-thread totals.
tt = {t["name"]: t["samples"] for t in report(threads, "--threads")["threads"]}
check(1.5 <= tt["worker-b"] / tt["worker-a"] <= 2.6, "--threads: worker-b/worker-a = %.2f" % (tt["worker-b"] / tt["worker-a"]))

# --lanes: per-thread buckets adding up to the thread's samples.
lanes = report(threads, "--lanes", "--lane-width", "20")["lanes"]
for lane in lanes["lanes"]:
    check(len(lane["buckets"]) == 20 and sum(lane["buckets"]) == lane["total"],
          "lane %s: 20 buckets summing to %d" % (lane["name"], lane["total"]))
text = run([MICROSCOPE, "report", "--lanes", threads]).stdout
check("Thread lanes" in text and "worker-c" in text, "lanes printed")
check("\033[" not in text, "no color codes when stdout is not a terminal")
check("\033[" in run([MICROSCOPE, "report", "--color", "always", threads]).stdout, "--color always colors")

# --granularity address: at least as many rows, each function's addresses listed.
by_addr = report(threads, "--granularity", "address")
check(len(by_addr["functions"]) >= len(report(threads)["functions"]), "address granularity splits rows")

# --diff: two recordings of split whose hot function changes (70/30, then 30/70).
base, other = d + "/base.mscap", d + "/other.mscap"
make_capture(base, "split")
make_capture(other, "split-swap")
diff = report(base, "--diff", other)["diff"]
# Totals: the work itself is in burn_units, inlined into hot and cold.
delta = {r["name"]: r["delta"] for r in diff["total"]}
check(-0.55 <= delta["hot"] <= -0.25, "hot's total share fell by %.1f points (70%% -> 30%%)" % (100 * delta["hot"]))
check(0.25 <= delta["cold"] <= 0.55, "cold's total share rose by %.1f points" % (100 * delta["cold"]))
paths = {r["name"]: r["delta"] for r in diff["paths"]}
hot_path = [p for p in paths if p.endswith(";main;run;hot")]
check("Total share change per function" in run([MICROSCOPE, "report", base, "--diff", other]).stdout, "diff tables printed")
check(hot_path and paths[hot_path[0]] < -0.25, "the path ...;main;run;hot lost share")
text = run([MICROSCOPE, "report", base, "--diff", other]).stdout
check("Self share change per function" in text and "hot" in text, "diff printed")

# Bad filter input: one clear line.
p = run([MICROSCOPE, "report", threads, "--focus", "(["])
check(p.returncode == 1 and "not a valid regex" in p.stderr, "bad regex refused: %r" % p.stderr.strip())
p = run([MICROSCOPE, "report", threads, "--thread", "nobody"])
check(p.returncode == 1 and "no thread 'nobody'" in p.stderr, "unknown thread refused: %r" % p.stderr.strip())

# --inlines off: burn_units' time goes to the functions it is inlined into
# (as perf report credits it); on (the default) it is a frame of its own.
on = functions(report(base, "--flat", "--top", "50"))
off = functions(report(base, "--flat", "--top", "50", "--inlines", "off"))
check("burn_units" in on and "burn_units" not in off, "--inlines off folds burn_units away")
check(off["hot"][0] + off["cold"][0] == on["burn_units"][0] + on["hot"][0] + on["cold"][0],
      "its self samples go to hot and cold: %s -> %s" % (on, off))
check(run([MICROSCOPE, "report", "--inlines", "sideways", base]).returncode != 0,
      "--inlines takes on or off")

# --granularity line: the lines and inline chains a recording stores.
# burn_units is inlined into hot: its samples sit on burn.h's loop lines,
# and hot's own frame on the line of split.c that calls it.
lines = report(base, "--granularity", "line")
names = [f["function"] for f in lines["functions"]]
burn = [n for n in names if n.startswith("burn_units ")]
hot = [n for n in names if n.startswith("hot ")]
check(burn and all("burn.h:" in n for n in burn), "burn_units' lines are in burn.h: %s" % burn)
check(hot and all("split.c:" in n for n in hot), "hot's line is its call site in split.c: %s" % hot)

# A build: make and 40 cc1plus processes with long command lines, one
# thread each. -n is rows per table, --threads and --lanes included.
build = d + "/build.mscap"
make_capture(build, "build")
text = run([MICROSCOPE, "report", "--threads", "-n", "10", build]).stdout
thread_rows = [l for l in text.split("Threads", 1)[1].splitlines() if l.endswith(" cc1plus") or l.endswith(" make")]
check(len(thread_rows) == 10, "--threads -n 10 prints 10 thread rows (%d)" % len(thread_rows))
check("... 30 threads not shown (-n shows more rows)" in text, "and says how many it left out")
check(len(report(build, "--threads", "-n", "10")["threads"]) == 40, "--json still lists every thread with samples")
text = run([MICROSCOPE, "report", "--lanes", "-n", "5", build]).stdout
lane_rows = [l for l in text.split("Thread lanes", 1)[1].splitlines() if "|" in l]
check(len(lane_rows) == 5, "--lanes -n 5 draws 5 lanes (%d)" % len(lane_rows))
check("... 35 lanes not shown (-n shows more rows)" in text, "and says how many it left out")
# The header's processes line stays one line: a few processes, commands cut.
line = [l for l in text.splitlines() if l.startswith("processes")][0]
check(len(line) < 400, "the processes line is %d characters" % len(line))
check(line.startswith("processes   41: 4000 make (exit 0);") and "... and 36 more (--json lists all)" in line,
      "it names the launched process first and counts the rest: %s" % line)

# One thread, one process: singular.
text = run([MICROSCOPE, "report", base]).stdout
check(", 1 thread\n" in text and "1 threads" not in text, "'1 thread', not '1 threads'")

# --granularity line and address: the tables say what their rows are.
text = run([MICROSCOPE, "report", "--granularity", "line", base]).stdout
check("Hottest lines by self time" in text and "Hottest functions" not in text and "line [module]" in text,
      "--granularity line titles its tables by lines")
text = run([MICROSCOPE, "report", "--granularity", "address", base]).stdout
check("Hottest addresses by total time" in text and "address [module]" in text,
      "--granularity address titles its tables by addresses")
check("Hottest addresses by self time (counts: samples)" in text, "the flat tables say their counts are samples")

# An imported folded file does not say whether kernel frames were recorded:
# the header says what its stacks hold instead of "off".
folded = d + "/kernel.folded"
with open(folded, "w") as f:
    f.write("main;read;entry_SYSCALL_64_[k];ksys_read_[k] 5\nmain;work 3\n")
imported = d + "/kernel.mscap"
check(run([MICROSCOPE, "convert", folded, "-o", imported]).returncode == 0, "folded with kernel frames imports")
text = run([MICROSCOPE, "report", imported]).stdout
check("kernel frames in the imported stacks" in text and "kernel frames off" not in text,
      "an import with _[k] frames does not claim kernel frames off")
check(report(imported)["header"]["kernel_frames"] is True, "nor does its JSON header")
plain = d + "/plain.folded"
with open(plain, "w") as f:
    f.write("main;work 3\n")
check(run([MICROSCOPE, "convert", plain, "-o", d + "/plain.mscap"]).returncode == 0, "folded without kernel frames imports")
check(report(d + "/plain.mscap")["header"]["kernel_frames"] is False, "one without _[k] frames has none")

# A regex libstdc++ would compile by recursion past the stack is refused.
p = run([MICROSCOPE, "report", "--focus", "(" * 20000 + ")" * 20000, threads])
check(p.returncode == 1 and p.stderr.startswith("microscope: error: ") and "longer than" in p.stderr,
      "--focus of 20,000 nested groups: %r" % p.stderr[-80:])
