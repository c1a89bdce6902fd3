"""microscope query on real recordings: the report's numbers written as SQL
over the capture's tables equal `report --json` exactly (self and total per
function, the thread split, off-CPU time by state and by thread, the zones'
statistics); several captures and a --continuous directory read as one; a
running --rolling recorder asked with --pid, going on after; the exported
file opened by sqlite3; JSON when piped; bad SQL, a write and a runaway
query refused with clear errors."""
import csv
import io
import json
import signal
import subprocess
import time

from common import *

require_perf()
d = tmpdir()


def query(*args, fmt="json", expect_rc=0):
    extra = ["--format", fmt] if fmt else []
    p = run([MICROSCOPE, "query", *extra, *args])
    if p.returncode != expect_rc:
        fail("query %s exited %d (want %d): %s" % (args, p.returncode, expect_rc, p.stderr))
    return p


def rows(*args):
    return json.loads(query(*args).stdout)


# --- A recording with samples, off-CPU time and system calls: two threads
# contending for one mutex.
cap = os.path.join(d, "mutex.mscap")
record(cap, [fixture("offcpu"), "mutex", "150"], ["--off-cpu", "--syscalls"])
rep = report(cap, "--threads", "--by-state")
check(rep["all"]["samples"] >= 100, "the recording has samples (%d)" % rep["all"]["samples"])

# Self and total per function, as report counts them (its defaults): the
# function_costs view, and the same numbers written in SQL over the tables.
want = sorted((f["function"], f["module"], f["self"]["samples"], f["self"]["value"],
               f["total"]["samples"], f["total"]["value"]) for f in rep["functions"])
got = sorted(tuple(r.values()) for r in rows(
    cap, "SELECT name, module, self_samples, self, total_samples, total FROM function_costs"))
check(got == want, "function_costs equals report's functions (%d rows; first differences: %s)"
      % (len(want), [x for x in got if x not in want][:3]))
by_hand = """
WITH k AS (SELECT sample, depth, weight, count, name,
                  coalesce('f' || function, 'x' || frame) AS key FROM sample_frames),
     per AS (SELECT key, name, sample, min(depth) AS d, weight, count FROM k GROUP BY key, sample)
SELECT name, sum(iif(d = 0, count, 0)), sum(iif(d = 0, weight, 0)), sum(count), sum(weight)
FROM per GROUP BY key"""
got = sorted(tuple(r.values()) for r in rows(cap, by_hand))
want_short = sorted((w[0], w[2], w[3], w[4], w[5]) for w in want)
check(got == want_short, "self and total written in SQL over sample_frames equal report's (%d rows)"
      % len(got))
total = rows(cap, "SELECT sum(count) AS n, sum(weight) AS w FROM samples")[0]
check((total["n"], total["w"]) == (rep["all"]["samples"], rep["all"]["value"]),
      "all samples and their weight as report counts them: %s" % total)

# The thread split.
want = sorted((t["tid"], t["pid"], t["name"], t["samples"], t["value"]) for t in rep["threads"]
              if t["samples"] > 0)
got = sorted(tuple(r.values()) for r in rows(cap, """
SELECT t.tid, t.pid, t.name, sum(s.count), sum(s.weight)
FROM samples s JOIN threads t ON t.id = s.thread GROUP BY t.id"""))
check(got == want, "samples per thread equal report --threads: %s against %s" % (got, want))

# Off-CPU time by state, and by thread and state: kept intervals and the
# short ones only counted.
by_state = rows(cap, """
WITH s(state) AS (VALUES ('sleeping'), ('uninterruptible'), ('preempted'), ('other'))
SELECT s.state,
  (SELECT count(*) FROM off_cpu o WHERE o.state = s.state) AS intervals,
  (SELECT coalesce(sum(count), 0) FROM off_cpu_short o WHERE o.state = s.state) AS short,
  (SELECT coalesce(sum(duration), 0) FROM off_cpu o WHERE o.state = s.state)
  + (SELECT coalesce(sum(total), 0) FROM off_cpu_short o WHERE o.state = s.state) AS total_ns
FROM s""")
states = rep["by_state"]["states"]
for r in by_state:
    w = states[r["state"]]
    check((r["intervals"], r["short"], r["total_ns"]) == (w["intervals"], w["short"], w["total_ns"]),
          "off-CPU %s: SQL %s, report %s" % (r["state"], r, w))
check(states["sleeping"]["intervals"] >= 50, "the contenders slept on the mutex (%d intervals)"
      % states["sleeping"]["intervals"])
got = sorted(tuple(r.values()) for r in rows(cap, """
SELECT tid, state, sum(intervals), sum(short), sum(total) FROM (
  SELECT tid, state, 1 AS intervals, 0 AS short, duration AS total FROM off_cpu
  UNION ALL SELECT tid, state, 0, count, total FROM off_cpu_short)
GROUP BY tid, state"""))
want = sorted((t["tid"], t["state"], t["intervals"], t["short"], t["total_ns"])
              for t in rep["by_state"]["threads"])
check(got == want, "off-CPU per thread and state equal report --by-state (%d rows)" % len(want))

# Who woke the contenders, from the same rows; and the system calls.
wakers = rows(cap, """
SELECT t.name, o.waker_name, count(*) AS n FROM off_cpu o JOIN threads t ON t.id = o.thread
WHERE o.state = 'sleeping' AND o.waker_tid IS NOT NULL GROUP BY 1, 2 ORDER BY n DESC""")
check(any(w["name"] == "contender" and w["waker_name"] == "contender" for w in wakers),
      "a contender woke the other: %s" % wakers[:3])
futex = rows(cap, "SELECT count(*) AS n FROM syscalls WHERE name = 'futex'")[0]["n"]
check(futex >= 50, "the lock's futex calls are in syscalls (%d)" % futex)
cpus = rows(cap, "SELECT count(*) AS n, count(cpu) AS known, min(cpu) AS lo, max(cpu) AS hi FROM samples")[0]
check(cpus["n"] == cpus["known"] and 0 <= cpus["lo"] and cpus["hi"] < os.cpu_count(),
      "every sample says its CPU, one of this machine's: %s" % cpus)
contains = rows(cap, """
SELECT count(*) AS n FROM off_cpu WHERE state = 'sleeping' AND stack_contains(stack, 'contend_lock')""")
check(contains[0]["n"] >= 50, "stack_contains finds the blocked contend_lock stacks (%d)"
      % contains[0]["n"])

# --- Zones (probes): their statistics as report --zones gives them.
pcap = os.path.join(d, "probes.mscap")
record(pcap, [fixture("probes"), "timed", "300"], ["--probes", "all"])
zrep = report(pcap, "--zones")["zones"]
got = {r["name"]: r for r in rows(pcap, """
SELECT z.name, count(z.duration) AS count, coalesce(sum(z.duration), 0) AS total_ns,
  coalesce(sum(z.self), 0) AS self_ns,
  sum(z.end IS NULL) AS open_at_end, sum(z.begin IS NULL) AS unmatched_ends,
  (SELECT coalesce(sum(count), 0) FROM zone_samples s WHERE s.zone_name = z.name) AS samples
FROM zones z GROUP BY z.name""")}
check(len(zrep["rows"]) >= 2 and len(got) == len(zrep["rows"]),
      "one row per zone: %s against %s" % (sorted(got), [r["zone"] for r in zrep["rows"]]))
for w in zrep["rows"]:
    g = got.get(w["zone"], {})
    fields = ("count", "total_ns", "self_ns", "open_at_end", "unmatched_ends", "samples")
    check(all(g.get(f) == w[f] for f in fields),
          "zone %s: SQL %s, report %s" % (w["zone"], g, {f: w[f] for f in fields}))
inside = rows(pcap, "SELECT coalesce(sum(count), 0) AS n FROM zone_samples")[0]["n"]
check(inside == zrep["samples_inside"], "samples inside zones: %d, report %d"
      % (inside, zrep["samples_inside"]))

# --- Several captures in one query, with a capture column and ids that join.
both = rows(cap, pcap, """
SELECT c.capture, c.path, count(s.id) AS n FROM captures c LEFT JOIN samples s ON s.capture = c.capture
GROUP BY c.capture ORDER BY c.capture""")
check([b["path"] for b in both] == [cap, pcap], "captures lists both, in order: %s" % both)
check(both[0]["n"] == rep["all"]["samples"], "the first capture's samples: %s" % both[0])
cross = rows(cap, pcap, """
SELECT count(*) AS n FROM samples s JOIN threads t ON t.id = s.thread WHERE t.capture != s.capture""")
check(cross[0]["n"] == 0, "ids join each row to its own capture's threads")

# --- A --continuous directory read as one capture.
segs = os.path.join(d, "segs")
os.mkdir(segs)
target = subprocess.Popen([fixture("longrun"), "60"], stdout=subprocess.PIPE, text=True)
check(target.stdout.readline().strip() == "ready", "longrun started")
try:
    p = run([MICROSCOPE, "record", "-q", "--continuous", segs, "--segment", "500ms",
             "--pid", str(target.pid), "--duration", "2s"])
    check(p.returncode == 0, "continuous recorder exited 0: %s" % p.stderr)
    names = [n for n in os.listdir(segs) if n.endswith(".mscap")]
    check(len(names) >= 3, "2 s in 500 ms segments: %d" % len(names))
    whole = report(segs)
    got = rows(segs, "SELECT count(*) AS captures, (SELECT sum(count) FROM samples) AS n FROM captures")[0]
    check(got == {"captures": 1, "n": whole["all"]["samples"]},
          "the directory is one capture, with report's %d samples: %s" % (whole["all"]["samples"], got))

    # --- A running --rolling recorder, asked without stopping it.
    rec = subprocess.Popen([MICROSCOPE, "record", "-q", "--rolling", "10s", "-o",
                            os.path.join(d, "roll.mscap"), "--pid", str(target.pid)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_recording(rec)
    time.sleep(1)
    first = rows("--pid", str(rec.pid), "SELECT part, (SELECT count(*) FROM samples) AS n FROM captures")[0]
    check(first["part"] == "window" or first["part"] == "snapshot",
          "query --pid reads the recorder's window: %s" % first)
    check(first["n"] > 100, "the window has the target's samples so far (%d)" % first["n"])
    time.sleep(0.5)
    second = rows("--pid", str(target.pid), "SELECT (SELECT count(*) FROM samples) AS n FROM captures")[0]
    check(rec.poll() is None, "the recorder goes on after two queries")
    check(second["n"] > first["n"], "asked again by the target's pid, the window has grown: %d then %d"
          % (first["n"], second["n"]))
    check(not [n for n in os.listdir(d) if n.startswith("roll")], "the queries left no file beside -o")
    rec.send_signal(signal.SIGINT)
    so, se = rec.communicate(timeout=60)
    check(rec.returncode == 0, "the rolling recorder stops on SIGINT, status 0 (%s)" % se)
finally:
    target.kill()
    target.wait()

# --- The exported file, read by sqlite3.
db = os.path.join(d, "mutex.db")
query("--export", db, cap, fmt=None)
p = run(["sqlite3", "-json", db, "SELECT name, self, total FROM function_costs ORDER BY self DESC, name"])
check(p.returncode == 0, "sqlite3 opens the exported file: %s" % p.stderr)
mine = rows(cap, "SELECT name, self, total FROM function_costs ORDER BY self DESC, name")
check(json.loads(p.stdout) == mine, "sqlite3 reads the same function_costs from the file")
p = run(["sqlite3", db, "SELECT count(*), sum(weight) FROM sample_frames WHERE depth = 0"])
mine = rows(cap, "SELECT count(*) AS n, sum(weight) AS w FROM sample_frames WHERE depth = 0")[0]
check(p.stdout.strip() == "%d|%d" % (mine["n"], mine["w"]),
      "the file's sample_frames (a view in SQL) gives the leaves: %s against %s" % (p.stdout.strip(), mine))

# --- Output formats: JSON when piped (the default here), the table with
# --human, CSV.
p = query(cap, "SELECT tid, name FROM threads ORDER BY tid", fmt=None)
check(isinstance(json.loads(p.stdout), list), "JSON when stdout is a pipe")
p = query("--human", cap, "SELECT tid, name FROM threads ORDER BY tid", fmt=None)
check(p.stdout.splitlines()[0].split() == ["tid", "name"] and p.stdout.rstrip().endswith("rows)"),
      "--human gives the table: %r" % p.stdout[:200])
p = query(cap, "SELECT tid, name FROM threads ORDER BY tid", fmt="csv")
check(next(csv.reader(io.StringIO(p.stdout))) == ["tid", "name"], "CSV with a header")
p = query(cap, "SELECT tid FROM threads", fmt="ndjson")
check(all("tid" in json.loads(l) for l in p.stdout.splitlines()), "NDJSON: an object per line")

# --- Refusals.
p = query(cap, "SELECT * FORM threads", expect_rc=1)
check("near \"FORM\": syntax error (at byte 9)" in p.stderr and "^" in p.stderr,
      "bad SQL: SQLite's message and where: %s" % p.stderr)
p = query(cap, "ATTACH '%s/evil.db' AS e" % d, expect_rc=1)
check("read-only" in p.stderr and not os.path.exists(d + "/evil.db"), "ATTACH refused: %s" % p.stderr)
t0 = time.monotonic()
p = query("--timeout", "300ms", cap,
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
          expect_rc=1)
check("time bound" in p.stderr and time.monotonic() - t0 < 20,
      "a runaway query stops at its --timeout: %s" % p.stderr)
p = query(cap, os.path.join(d, "absent.mscap"), "SELECT 1", expect_rc=1)
check("absent.mscap" in p.stderr, "a capture that is not there is named: %s" % p.stderr)

# --- The docs' tables are the binary's declarations.
gen = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "gen-query-docs")
p = run([sys.executable, gen, MICROSCOPE, "--check"])
check(p.returncode == 0, "docs/query.md lists the tables and columns query declares: %s" % p.stderr)
print("query: all checks passed")
