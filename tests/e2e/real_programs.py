"""Programs nobody here wrote, as Debian ships them, recorded side by side
with `perf record --call-graph dwarf` (perf's default 8 KiB stack copy,
microscope's default 16 KiB): a stripped compressor (gzip -9), a database
(sqlite3 running recursive queries and an index build), a parallel C++
build and a storm of short-lived processes. For each, the share of samples whose user stack
reaches the process entry (or a thread's start) is at least perf's and
nothing is lost; the storm keeps every process it started, with its name
and exit status, and names the dynamic loader's entry `_start`."""
import collections
import random
import shutil

from common import *

require_perf()
for tool, package in (("perf", "linux-perf"), ("gzip", "gzip"), ("sqlite3", "sqlite3"),
                      ("make", "make"), ("g++", "g++")):
    if shutil.which(tool) is None:
        fail("%s (Debian package %s, installed by scripts/setup) is needed" % (tool, package))
d = tmpdir()

# The outermost frames of a whole stack in perf's view: the program's or the
# loader's _start, a thread's clone3; a stripped program's _start is unnamed
# ([unknown]) right after __libc_start_main.
ROOTS = {"_start", "clone3", "__clone3", "clone", "__clone"}


def perf_whole(data):
    user = whole = 0
    for stack in perf_user_stacks(data):
        frames = [sym for _, sym in stack]
        if not frames:
            continue
        user += 1
        if frames[-1] in ROOTS or (frames[-1] == "[unknown]" and len(frames) > 1 and
                                   frames[-2].startswith("__libc_start_main")):
            whole += 1
    return user, whole


def compare(name, command, hz=999):
    data = os.path.join(d, name + ".data")
    cap = os.path.join(d, name + ".mscap")
    with open(os.devnull, "w") as null:
        p = run(["perf", "record", "-q", "--call-graph", "dwarf", "-F", str(hz), "-o", data, "--"] + command,
                stdout=null, capture_output=False, stderr=subprocess.PIPE)
        check(p.returncode == 0, "%s: perf record ran (%s)" % (name, p.stderr[-300:]))
        p = run([MICROSCOPE, "record", "-q", "-F", str(hz), "-o", cap, "--"] + command,
                stdout=null, capture_output=False, stderr=subprocess.PIPE)
        check(p.returncode == 0, "%s: microscope record ran (%s)" % (name, p.stderr[-300:]))
    pu, pw = perf_whole(data)
    h = report(cap)["header"]
    mu, mw = whole_stacks(h)
    print("%s: whole stacks: microscope %d of %d (%.1f%%), perf %d of %d (%.1f%%); ends %s" %
          (name, mw, mu, 100.0 * mw / max(mu, 1), pw, pu, 100.0 * pw / max(pu, 1),
           {k: v for k, v in h["stack_ends"].items() if v}))
    check(mu > 300 and pu > 300, "%s: both sampled the program (%d, %d)" % (name, mu, pu))
    # A point of slack for the two recordings' different samples.
    check(100.0 * mw / mu >= 100.0 * pw / pu - 1.0,
          "%s: whole stacks %.1f%%, at least perf's %.1f%%" % (name, 100.0 * mw / mu, 100.0 * pw / pu))
    check(h["lost_records"] == 0 and h["lost_samples"] == 0,
          "%s: nothing lost (%d records)" % (name, h["lost_records"]))
    return cap, h


# A compressor: 12 MB of made-up log lines, gzip -9 (Debian strips gzip).
rng = random.Random(12)
words = ["request", "served", "cache", "miss", "user", "GET", "POST", "/api/v1/items", "200", "404"]
text = os.path.join(d, "input.log")
with open(text, "w") as f:
    for i in range(200000):
        f.write("%d %s %s %d\n" % (i, " ".join(rng.choice(words) for _ in range(8)),
                                    rng.choice(words), rng.randrange(1 << 30)))
compare("gzip", ["gzip", "-9", "-c", text])

# A database: recursive common table expressions, printf, a temporary
# table, an index and a self-join, in memory.
sql = os.path.join(d, "work.sql")
with open(sql, "w") as f:
    f.write("""
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1500000)
  SELECT count(*), sum(length(printf('%08d', x))) FROM c;
CREATE TEMP TABLE t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 300000)
  SELECT x, printf('%x', x * 7919 % 1000003) AS s FROM c;
CREATE INDEX ti ON t(s);
SELECT count(*) FROM t a JOIN t b ON a.s = b.s;
""")
compare("sqlite3", ["sqlite3", ":memory:", ".read " + sql])

# A build: make -j8 of 8 C++ files, 26 processes (sh, which runs rm and
# becomes make; g++, cc1plus and as for each file). Reading cc1plus's CFI the first time takes the reader
# about a second on a loaded machine: the rings must still be drained.
build = os.path.join(d, "build")
os.mkdir(build)
objs = []
for i in range(8):
    with open(os.path.join(build, "f%d.cc" % i), "w") as f:
        f.write("#include <algorithm>\n#include <map>\n#include <string>\n#include <vector>\n"
                "int f%d(int n) { std::map<std::string, std::vector<int>> m;\n"
                "  for (int i = 0; i < n; i++) m[std::to_string(i %% %d)].push_back(i);\n"
                "  int s = 0; for (auto& [k, v] : m) s += std::count(v.begin(), v.end(), %d);\n"
                "  return s; }\n" % (i, i + 3, i))
    objs.append("f%d.o" % i)
with open(os.path.join(build, "Makefile"), "w") as f:
    f.write("all: %s\n%%.o: %%.cc\n\tg++ -O2 -c $< -o $@\n" % " ".join(objs))
cap, h = compare("build", ["sh", "-c", "rm -f %s/*.o && exec make -s -j8 -C %s" % (build, build)])
check(len(h["processes"]) == 26, "build: %d processes kept of 26 started" % len(h["processes"]))

# A storm: 250 rounds of two short programs, 501 processes in all, each
# using a millisecond or two of CPU: sampled at 4999 Hz.
rounds = 250
script = ('i=0; while [ $i -lt %d ]; do gzip -c /etc/services >/dev/null; ls / >/dev/null; '
          'i=$((i + 1)); done' % rounds)
cap, h = compare("storm", ["sh", "-c", script], hz=4999)
procs = h["processes"]
check(len(procs) == 2 * rounds + 1, "storm: %d processes kept of %d started" % (len(procs), 2 * rounds + 1))
names = collections.Counter(p["command"] for p in procs)
check(names["gzip"] == rounds and names["ls"] == rounds and names["sh"] == 1,
      "storm: every process has its name: %s" % dict(names))
check(all(p.get("exit_status") == 0 for p in procs),
      "storm: every process has its exit status (0): %s" %
      [p for p in procs if p.get("exit_status") != 0][:3])
# A sample inside execve holds the replaced program's pc: named there
# (in-exec), not left in no mapping.
check(h["stack_ends"]["unmapped-pc"] == 0,
      "storm: no pc outside every mapping (in-exec: %d)" % h["stack_ends"]["in-exec"])
rep = report(cap, "--focus", "^_start$", "-n", "1000")
loader = [f for f in rep["functions"] if f["module"].startswith("ld-linux") and f["function"] == "_start"]
check(loader and loader[0]["total"]["samples"] > 0,
      "storm: the dynamic loader's entry is named _start (%s)" % loader)
