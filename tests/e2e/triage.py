"""microscope triage on programs with one known cause of slowness each: a
CPU-bound loop, two threads contending for two CPUs with a third busy
process, a cgroup quota throttling a loop, a lock convoy, a sleep loop,
blocking reads from a pipe, a GIL-bound Python program and a throttled
Node program. For each: the known cause is the top finding; its share is
within 10 points of what the target's own schedstat and off-CPU time say
for the same window (its busy threads' time, not wall time: it holds on a
loaded machine); and its next command, run as printed, shows it. Then a
user's rule directory, a rule that fails, and the text form."""
import json
import shlex
import subprocess
import time

from common import *

require_perf()
d = tmpdir()
FIXTURES_DIR = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                             "fixtures"))
fx = fixture("triage")
# The programs whose cause is not the CPU's scarcity run above the rest of
# a loaded machine (SCHED_FIFO 1, which nice within another session's
# autogroup is not): what they are made of, not the load around them,
# decides their top finding. Each keeps at most one CPU busy.
FIRST = ["chrt", "-f", "1"]


def triage(args, name):
    out = os.path.join(d, name + ".mscap")
    p = run([MICROSCOPE, "triage", "-o", out, *args], timeout=180)
    check(p.returncode == 0, "triage %s exited 0 (%s)" % (name, p.stderr.strip()[-400:]))
    report = json.loads(p.stdout)
    check(report["schema"] == "microscope.triage/1", "a versioned schema")
    return out, report


def query(cap, sql):
    p = run([MICROSCOPE, "query", "--format", "json", cap, sql])
    check(p.returncode == 0, "query: %s" % p.stderr)
    return json.loads(p.stdout)


def own_account(cap):
    """Per thread of the target, from the capture's raw rows (not the
    views the rules read): its window (first to last schedstat reading),
    the deltas of its schedstat, and its off-CPU time by state inside that
    window; only the threads that did something (as the rules count them:
    wanted a CPU a tenth of the time, or woke ten times a second)."""
    readings = query(cap, "SELECT r.tid, t.name, r.time, r.key, r.value FROM readings r "
                          "JOIN threads t ON t.id = r.thread ORDER BY r.time")
    threads = {}
    for r in readings:
        t = threads.setdefault(r["tid"], {"start": r["time"], "end": r["time"], "first": {}, "last": {},
                                          "name": r["name"]})
        t["end"] = r["time"]
        t["first"].setdefault(r["key"], r["value"])
        t["last"][r["key"]] = r["value"]
    off = query(cap, "SELECT tid, start, end, state FROM off_cpu")
    out = {}
    for tid, t in threads.items():
        delta = {k: t["last"][k] - t["first"][k] for k in t["first"]}
        life = t["end"] - t["start"]
        if life <= 0:
            continue
        row = {"life": life, "name": t["name"], "on_cpu": delta.get("sched.on_cpu_ns", 0),
               "run_delay": delta.get("sched.run_delay_ns", 0),
               "slices": delta.get("sched.timeslices", 0)}
        for state in ("sleeping", "uninterruptible", "preempted"):
            row[state] = sum(max(0, min(o["end"], t["end"]) - max(o["start"], t["start"]))
                             for o in off if o["tid"] == tid and o["state"] == state)
        if (row["on_cpu"] + row["run_delay"]) * 10 >= life or row["slices"] * 1e8 >= life:
            out[tid] = row
    return out


def throttled_share(cap, account):
    """The cgroup's own count of its throttled time (cpu.stat) in the
    window, over the busy threads' time."""
    rows = query(cap, "SELECT scope, value FROM readings WHERE key = 'cpu.throttled_ns' ORDER BY time")
    first, last = {}, {}
    for r in rows:
        first.setdefault(r["scope"], r["value"])
        last[r["scope"]] = r["value"]
    throttled = max([last[k] - first[k] for k in first] or [0])
    life = sum(t["life"] for t in account.values())
    return min(throttled, sum(t["run_delay"] for t in account.values())) / life if life else 0


def share(account, what):
    life = sum(t["life"] for t in account.values())
    return sum(what(t) for t in account.values()) / life if life else 0


def expect(report, cap, rule, own, shows, case):
    findings = report["findings"]
    check(findings and findings[0]["rule"] == rule,
          "%s: the top finding is %s: %s" % (case, rule,
                                             [(f["rule"], round(f["share"], 3)) for f in findings]))
    top = findings[0]
    check(abs(top["share"] - own) <= 0.10,
          "%s: its share %.3f is within 10 points of the target's own account, %.3f"
          % (case, top["share"], own))
    # The next command, run as printed.
    argv = shlex.split(top["next"])
    check(argv[0] == "microscope", "%s: the next command is microscope's: %s" % (case, top["next"]))
    p = run([MICROSCOPE, *argv[1:]])
    check(p.returncode == 0 and shows in p.stdout,
          "%s: `%s` shows %r (exit %d)" % (case, top["next"], shows, p.returncode))
    return top


# --- A CPU-bound loop.
cap, rep = triage(["--", *FIRST, fx, "cpu", "1200"], "cpu")
acc = own_account(cap)
expect(rep, cap, "cpu_bound", share(acc, lambda t: t["on_cpu"]), "hot_loop", "cpu loop")
check(rep["findings"][0]["evidence"]["function"] == "hot_loop", "the hot function is named")

# --- Two threads contending for two CPUs with a third busy process.
cap, rep = triage(["--", fx, "contend", "800"], "contend")
acc = own_account(cap)
expect(rep, cap, "run_queue", share(acc, lambda t: t["run_delay"]), "preempted", "contention")

# --- A lock convoy.
cap, rep = triage(["--", *FIRST, fx, "convoy", "250"], "convoy")
acc = own_account(cap)
top = expect(rep, cap, "lock_wait", share(acc, lambda t: t["sleeping"]), "convoy_lock", "lock convoy")
check("convoy" in top["evidence"]["waker"], "the lock's releaser is a convoy thread: %s" % top["evidence"])

# --- A sleep loop.
cap, rep = triage(["--", *FIRST, fx, "sleep", "200"], "sleep")
acc = own_account(cap)
expect(rep, cap, "sleeping", share(acc, lambda t: t["sleeping"]), "nanosleep", "sleep loop")

# --- Blocking reads from a pipe.
cap, rep = triage(["--", *FIRST, fx, "pipe", "100"], "pipe")
acc = own_account(cap)
top = expect(rep, cap, "blocked_io", share(acc, lambda t: t["sleeping"]), "read", "pipe reads")
check(top["evidence"]["call"] == "read", "the call is read: %s" % top["evidence"])

# --- A GIL-bound Python program.
# Its own account: the spinning threads' time asleep (the main thread,
# joining them, waits for them, not for the GIL).
cap, rep = triage(["--", *FIRST, "/usr/bin/python3", os.path.join(FIXTURES_DIR, "python", "gil.py"), "8000000"],
                  "gil")
every = own_account(cap)
acc = {tid: t for tid, t in every.items() if t["name"].startswith("spinner")}
check(len(acc) == 4, "the four spinning threads were read: %s (every thread read: %s)"
      % (acc, {tid: (t["name"], t["life"]) for tid, t in every.items()}))
expect(rep, cap, "gil", share(acc, lambda t: t["sleeping"]), "spinner", "GIL-bound Python")


# --- A cgroup's CPU quota: a C loop and a Node program, each attached in a
# cgroup allowed 20% of a CPU.
def cgroup_dir():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            tail = line.split(" - ", 1)[1].split()
            if tail[0] == "cgroup" and "cpu" in tail[2].split(","):
                return fields[4], 1
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split(" - ", 1)[1].split()[0] == "cgroup2":
                return line.split()[4], 2
    fail("no cgroup CPU controller on this machine")


def throttled(command, name):
    mount, version = cgroup_dir()
    group = os.path.join(mount, "microscope-e2e-%d-%s" % (os.getpid(), name))
    os.mkdir(group)
    target = None
    try:
        if version == 1:
            with open(group + "/cpu.cfs_period_us", "w") as f:
                f.write("100000")
            with open(group + "/cpu.cfs_quota_us", "w") as f:
                f.write("20000")
        else:
            with open(group + "/cpu.max", "w") as f:
                f.write("20000 100000")
        target = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        check(target.stdout.readline().strip() == "ready", "%s started" % name)
        with open(group + "/cgroup.procs", "w") as f:
            f.write(str(target.pid))
        time.sleep(0.3)
        return triage(["--pid", str(target.pid), "--duration", "1500ms"], name)
    finally:
        if target is not None:
            target.kill()
            target.wait()
        for _ in range(50):
            try:
                os.rmdir(group)
                break
            except OSError:
                time.sleep(0.1)


cap, rep = throttled([fx, "cpu", "20000"], "quota")
acc = own_account(cap)
top = expect(rep, cap, "cgroup_throttling", throttled_share(cap, acc), "throttled", "cgroup quota")
check(top["evidence"]["quota_us"] == 20000 and top["evidence"]["period_us"] == 100000,
      "the quota and period are the cgroup's: %s" % top["evidence"])

node = "/usr/bin/node"
cap, rep = throttled([node, os.path.join(FIXTURES_DIR, "node", "spin.js"), "100000"], "node")
acc = own_account(cap)
expect(rep, cap, "cgroup_throttling", throttled_share(cap, acc), "throttled", "throttled Node")

# --- What the window could not answer is said.
nc = [n["what"] for n in rep["not_covered"]]
check("GPU activity" in nc and "I/O device latency" in nc and "lock owner" in nc,
      "not_covered names what one window cannot answer: %s" % nc)

# --- A user's rules: one more, one that replaces a built-in rule, one that fails.
rules = os.path.join(d, "rules")
os.mkdir(rules)
with open(rules + "/threads_seen.sql", "w") as f:
    f.write("-- title: {n} threads read\n-- minimum: 0\n-- next: microscope query {capture} "
            "\"SELECT count(*) FROM thread_window\"\nSELECT 1.0 AS share, count(*) AS n FROM thread_window\n")
with open(rules + "/cpu_bound.sql", "w") as f:
    f.write("-- title: replaced\n-- next: microscope report {capture}\nSELECT 0.99 AS share\n")
with open(rules + "/broken.sql", "w") as f:
    f.write("-- title: broken\n-- next: microscope report {capture}\nSELECT share FROM nowhere\n")
cpu = os.path.join(d, "cpu.mscap")
p = run([MICROSCOPE, "triage", "--rules", rules, "-o", os.path.join(d, "user.mscap"), "--", fx, "cpu", "300"])
check(p.returncode == 0, "triage with --rules: %s" % p.stderr)
rep = json.loads(p.stdout)
by_rule = {f["rule"]: f for f in rep["findings"]}
check(by_rule.get("threads_seen", {}).get("title") == "1 threads read", "a user's rule runs: %s" % {k: v.get("title") for k, v in by_rule.items()})
check(by_rule.get("cpu_bound", {}).get("title") == "replaced", "a rule of the same name replaces the built-in one")
check(any("broken" in e and "no such table: nowhere" in e for e in rep.get("rule_errors", [])),
      "a rule that fails is said, and the others run: %s" % rep.get("rule_errors"))

# --- The text form.
p = run([MICROSCOPE, "triage", "--human", "-o", os.path.join(d, "text.mscap"), "--", fx, "cpu", "300"])
check(p.returncode == 0 and " 1. " in p.stdout and "next: microscope report" in p.stdout
      and "not covered by this window:" in p.stdout, "--human: numbered findings: %r" % p.stdout[:600])
print("triage: all checks passed")
