"""Programs in other mount and pid namespaces (every container): the
fixture without frame pointers runs from a private tmpfs mounted inside
`unshare -m`, so its path names nothing on this host (or, in the decoy
cases, another build of another program). Launched under unshare and
attached with --pid, its hot function must be named and at least 90% of its
samples must have complete stacks: its files are read through its own root
(/proc/PID/root), proved by build ID; the host's file at the same path is
refused. A stripped program is named from the debug file in its own root."""
import json
import os
import re
import shutil
import signal
import subprocess
import time

from common import *

require_perf()
if shutil.which("unshare") is None:
    fail("unshare (util-linux) is needed")
d = tmpdir()
EXPECTED = (["_start", "__libc_start_main", "__libc_start_call_main", "main", "run_recurse"] +
            ["recurse"] * 41 + ["leaf_hot"])
ALIASES = {"__libc_start_main": ("__libc_start_main_impl",)}
MNT = ["unshare", "-m", "--propagation", "private"]
PID = ["unshare", "-m", "-p", "-f", "--kill-child", "--mount-proc", "--propagation", "private"]


def inside(ns_dir, rounds):
    """A shell command that mounts a tmpfs over ns_dir, copies the fixture
    into it and runs it from there."""
    return ("mount -t tmpfs none %s && cp %s %s/unwind && exec %s/unwind recurse %d" %
            (ns_dir, fixture("unwind"), ns_dir, ns_dir, rounds))


def prepare(name, decoy):
    ns_dir = "%s/%s" % (d, name)
    os.mkdir(ns_dir)
    if decoy:  # another program at the same path on the host
        shutil.copy(fixture("longrun"), ns_dir + "/unwind")
    return ns_dir


def complete(path):
    return len(path) == len(EXPECTED) and all(
        p == e or p in ALIASES.get(e, ()) for p, e in zip(path, EXPECTED))


def verify(name, out, decoy):
    rep = report(out, "--tree", "--min-percent", "0")
    h = rep["header"]
    fn = functions(rep)
    rows = leaf_samples(rep, "leaf_hot")
    leaf = sum(n for _, n in rows)
    good = sum(n for p, n in rows if complete(p))
    mine = [p for p in h["processes"] if p["samples"] > 0]
    hot = sum(p["samples"] for p in mine)
    print("%s: leaf_hot named in %d of %d samples (%.1f%%); complete chain in %d (%.1f%%); "
          "stack ends %s" % (name, leaf, h["samples"], 100.0 * leaf / max(1, h["samples"]), good,
                             100.0 * good / max(1, leaf), h["stack_ends"]))
    check(leaf > 100, "%s: leaf_hot named (%d samples)" % (name, leaf))
    check(good >= 0.9 * leaf, "%s: complete chain in %d of %d leaf_hot samples" % (name, good, leaf))
    if decoy:
        check("spin_main" not in fn and "spin_child" not in fn,
              "%s: the host's decoy at the same path never named a frame" % name)
    return rep


# Launch mode: microscope record -- unshare ... sh -c 'mount; cp; exec'.
for name, unshare, decoy in (("launch-mnt", MNT, False), ("launch-pid", PID, True)):
    ns_dir = prepare(name, decoy)
    out = "%s/%s.mscap" % (d, name)
    record(out, unshare + ["sh", "-c", inside(ns_dir, 200)])
    check(decoy or not os.path.exists(ns_dir + "/unwind"), "%s: the binary's path is not on the host" % name)
    verify(name, out, decoy)

# A container that ships its debug files: a stripped copy of the fixture,
# its debug file in the namespace's own /usr/lib/debug (a tmpfs there hides
# the host's), found through the target's root and proved by build ID.
name = "debug-in-root"
ns_dir = prepare(name, False)
stripped, debug = d + "/unwind.stripped", d + "/unwind.debug"
shutil.copy(fixture("unwind"), stripped)
check(run(["objcopy", "--only-keep-debug", stripped, debug]).returncode == 0, "objcopy --only-keep-debug")
check(run(["strip", "--strip-all", stripped]).returncode == 0, "strip --strip-all")
bid = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", stripped]).stdout).group(1)
check(not os.path.exists("/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])),
      "the host has no debug file for this build")
out = "%s/%s.mscap" % (d, name)
script = ("mount -t tmpfs none {ns} && cp {bin} {ns}/unwind && mount -t tmpfs none /usr/lib/debug && "
          "mkdir -p /usr/lib/debug/.build-id/{a} && cp {dbg} /usr/lib/debug/.build-id/{a}/{b}.debug && "
          "exec {ns}/unwind recurse 200").format(ns=ns_dir, bin=stripped, dbg=debug, a=bid[:2], b=bid[2:])
record(out, MNT + ["sh", "-c", script])
verify(name, out, False)

# Symbolized later on this host, the capture meets only the decoy at the
# recorded path: refused by build ID, never used for names.
ns_dir = prepare("later", True)
out = d + "/later.mscap"
record(out, PID + ["sh", "-c", inside(ns_dir, 50)], ["--symbolize", "later"])
p = run([MICROSCOPE, "symbolize", out, "--json", "-o", d + "/later-named.mscap"])
check(p.returncode == 0, "symbolize on the host exited 0 (%d: %s)" % (p.returncode, p.stderr))
m = [m for m in json.loads(p.stdout)["modules"] if m["path"] == ns_dir + "/unwind"]
check(len(m) == 1 and m[0]["named"] == 0 and m[0]["unnamed"].get("build ID mismatch") == m[0]["frames"],
      "later: the host's decoy at the recorded path is refused: %s" % (m and m[0]["unnamed"]))
fn = functions(report(d + "/later-named.mscap"))
check("spin_main" not in fn and "leaf_hot" not in fn, "later: no frame named from the decoy")


def target_pid(launcher):
    """The pid (ours) of the fixture once it runs from the tmpfs: the
    launcher itself (unshare -m execs) or its child (unshare -p -f forks)."""
    deadline = time.time() + 10
    while time.time() < deadline:
        pids = [launcher.pid]
        try:
            with open("/proc/%d/task/%d/children" % (launcher.pid, launcher.pid)) as f:
                pids += [int(x) for x in f.read().split()]
        except OSError:
            pass
        for pid in pids:
            try:
                with open("/proc/%d/comm" % pid) as f:
                    if f.read().strip() == "unwind":
                        return pid
            except OSError:
                pass
        time.sleep(0.05)
    fail("the fixture did not start in its namespace")


# Attach mode: record --pid on a long-running copy.
for name, unshare, decoy in (("attach-mnt", MNT, True), ("attach-pid", PID, False)):
    ns_dir = prepare(name, decoy)
    out = "%s/%s.mscap" % (d, name)
    launcher = subprocess.Popen(unshare + ["sh", "-c", inside(ns_dir, 1000000)])
    pid = None
    try:
        pid = target_pid(launcher)
        time.sleep(0.3)
        p = run([MICROSCOPE, "record", "-q", "-o", out, "--pid", str(pid), "--duration", "2s"])
        check(p.returncode == 0, "%s: record --pid exited 0 (%d: %s)" % (name, p.returncode, p.stderr))
    finally:
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait()
    verify(name, out, decoy)
