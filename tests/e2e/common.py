"""Shared helpers for the end-to-end tests: run the real microscope binary on
the real fixtures and read its JSON report. A test that needs perf_event
skips (exit 77) outside CI when perf_event is not usable, and fails in CI.
A test of what reads captures (report, convert, malformed input) builds its
capture with make_capture instead, and runs anywhere."""
import atexit
import json
import shutil
import os
import select
import subprocess
import time
import sys
import tempfile

MICROSCOPE = os.environ.get("MICROSCOPE", "microscope")
# The programs being profiled; E2E_FIXTURES points the sanitized suite at the
# first build's (scripts/test), so that both suites profile the same programs.
FIXTURES = os.environ.get("E2E_FIXTURES") or os.environ.get("FIXTURES", ".")
SKIP = 77
# A build under AddressSanitizer and UndefinedBehaviorSanitizer (build-asan/;
# meson sets it from b_sanitize).
SANITIZED = os.environ.get("E2E_SANITIZED") == "1"
# The recorder reads a process's names and code (perf maps, trampolines,
# Python code objects) while it lives, some 50-110 ms after the samples
# (docs/design.md). A sanitizer build's recorder is a few times slower and
# reads them later: the phases a test needs read while a process lives
# last this many times longer there (E2E_LAG_FACTOR overrides it).
LAG_FACTOR = float(os.environ.get("E2E_LAG_FACTOR", "3" if SANITIZED else "1"))


def fixture(name):
    return os.path.join(FIXTURES, name)


def read_line(stream, want, seconds=30):
    """Reads lines of `stream` until one equals `want`; False at EOF or timeout."""
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([stream], [], [], max(0.0, end - time.time()))
        if not ready:
            break
        line = stream.readline()
        if not line:
            return False
        if line.strip() == want:
            return True
    return False


def wait_recording(rec, seconds=60):
    """Waits until the recorder `rec` (a Popen of `record`) is recording:
    it listens for snapshots (@microscope/recorder/PID) once its target is
    attached or launched and every source has started, so what the target
    does after this is recorded. Fails if the recorder ends first or takes
    longer than `seconds`. (Its perf events or BPF links appear earlier:
    a child forked then was sampled without its parent, and a sleeper
    released then lost most of its intervals on a loaded machine.)"""
    name = "@microscope/recorder/%d" % rec.pid
    end = time.time() + seconds
    while time.time() < end and rec.poll() is None:
        with open("/proc/net/unix") as f:
            if any(line.split()[-1] == name for line in f.readlines()[1:] if len(line.split()) >= 8):
                return
        time.sleep(0.02)
    fail("the recorder was not recording within %g s (status %s)" % (seconds, rec.poll()))


def held_bpf(pid):
    """{prog, map, link: ids} of the BPF objects `pid`'s descriptors hold
    (their /proc fdinfo names them)."""
    held = {"prog": set(), "map": set(), "link": set()}
    for fd in os.listdir("/proc/%d/fdinfo" % pid):
        try:
            text = open("/proc/%d/fdinfo/%s" % (pid, fd)).read()
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition(":")
            if key in ("prog_id", "map_id", "link_id"):
                held[key[:-3]].add(int(value))
    return held

def wait_bpf_attached(proc, seconds=60):
    """Waits until `proc` (a Popen) holds BPF links and their number has
    not changed for 0.3 s: its programs are attached."""
    end = time.time() + seconds
    seen, since = -1, time.time()
    while time.time() < end and proc.poll() is None:
        try:
            n = len(held_bpf(proc.pid)["link"])
        except OSError:
            n = 0
        if n != seen:
            seen, since = n, time.time()
        elif n > 0 and time.time() - since >= 0.3:
            return
        time.sleep(0.05)
    fail("%s did not attach its BPF programs within %g s (status %s)" % (proc.args[0], seconds, proc.poll()))


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)
    print("ok: " + message)


def require(present, missing):
    """Goes on when `present`; else exits 77 (skip) saying what is `missing`,
    or fails with CI=true, where every test must run."""
    if present:
        return
    if os.environ.get("CI") == "true":
        fail("CI must run this test: " + missing)
    print("SKIP: " + missing)
    sys.exit(SKIP)


def require_perf():
    """Exit 77 (skip) when perf_event cannot be used here, unless CI=true."""
    reason = None
    if os.geteuid() != 0:
        reason = "not root"
    else:
        try:
            with open("/proc/sys/kernel/perf_event_paranoid") as f:
                f.read()
        except OSError:
            reason = "no perf_event support (/proc/sys/kernel/perf_event_paranoid missing)"
    require(reason is None, "perf_event cannot be used: %s" % reason)


def fetch_runtimes(script, versions):
    """{version: program} from the cache outside the repository that
    scripts/fetch-runtimes fills before the tests (scripts/SCRIPT: fetch-python,
    fetch-node, asked for cached versions only); skips, or fails in CI, when
    one is not there."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", script)
    p = run([path, *versions], env=dict(os.environ, MICROSCOPE_RUNTIMES_CACHED="1"))
    require(p.returncode == 0, "scripts/%s failed (%d): %s" % (script, p.returncode, p.stderr.strip()[-500:]))
    return dict(line.split("\t") for line in p.stdout.splitlines())


def whole_stacks(header):
    """(samples with a user stack, those whose stack is whole) of a
    capture's header. A sample taken inside execve after the old address
    space was dropped (in-exec) has no user stack left to walk; perf shows
    no user frame for it either (485 of 494 such samples of a storm)."""
    ends = header["stack_ends"]
    return (header["samples"] - ends["kernel-only"] - ends["empty"] - ends["in-exec"],
            ends["complete"])


def fetch_npm_programs():
    """The node_modules directory of the real JavaScript programs the tests
    record (scripts/fetch-npm-programs: tsc, terser, prettier, rxjs, lodash)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                        "fetch-npm-programs")
    p = run([path], env=dict(os.environ, MICROSCOPE_RUNTIMES_CACHED="1"))
    require(p.returncode == 0, "scripts/fetch-npm-programs failed (%d): %s" %
            (p.returncode, p.stderr.strip()[-500:]))
    return os.path.join(p.stdout.strip(), "node_modules")


def fetch_pythons(versions=("3.13", "3.14", "3.15")):
    """{version: interpreter} of the CPython releases Debian's newer suites
    ship (scripts/fetch-python)."""
    return fetch_runtimes("fetch-python", versions)


def fetch_nodes():
    """{major: node} of Debian's Node 20 and Node 22, 24 and 26 from the npm
    registry (scripts/fetch-node); fails when Debian's is not installed."""
    nodes = {"20": "/usr/bin/node"}
    nodes.update(fetch_runtimes("fetch-node", ["22", "24", "26"]))
    check(os.path.exists(nodes["20"]), "Debian's node 20 is installed")
    return nodes


_attacker = []


def attacker():
    """A local user of no privilege, made for this test and removed at its
    end: (uid, gid, the setpriv prefix that runs a command as that user)."""
    if not _attacker:
        require(os.geteuid() == 0, "making a local user to attack with needs root")
        # Users an earlier test left when it was killed (its atexit never ran).
        with open("/etc/passwd") as f:
            for line in f:
                old = line.split(":", 1)[0]
                if old.startswith("mscope-t") and old[8:].isdigit() and not os.path.exists("/proc/" + old[8:]):
                    subprocess.run(["userdel", old], capture_output=True)
        name = "mscope-t%d" % os.getpid()
        p = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                            "--user-group", name], capture_output=True, text=True)
        if p.returncode != 0:
            fail("useradd %s: %s" % (name, p.stderr.strip()))
        atexit.register(subprocess.run, ["userdel", name], capture_output=True)
        import pwd
        pw = pwd.getpwnam(name)
        _attacker.append((pw.pw_uid, pw.pw_gid, ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
                                                 "--clear-groups"]))
    return _attacker[0]


def serve_url(line):
    """(base "http://HOST:PORT/", port, token) of the URL `microscope serve`
    prints ("http://127.0.0.1:PORT/?token=HEX[&...]"); fails on another line."""
    import re
    m = re.match(r"(http://[^/]+:(\d+)/)\?token=([0-9a-f]{32})(&|$)", line.strip())
    if m is None:
        fail("serve printed no URL with a token: %r" % line)
    return m.group(1), int(m.group(2)), m.group(3)


def tree_state(path):
    """{relative path: (mode, uid, size, link target or sha1 of content)} of
    everything under `path`, to show nothing in it moved or changed."""
    import hashlib
    state = {}
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            full = os.path.join(root, n)
            st = os.lstat(full)
            if os.path.islink(full):
                what = os.readlink(full)
            elif os.path.isfile(full):
                with open(full, "rb") as f:
                    what = hashlib.sha1(f.read()).hexdigest()
            else:
                what = ""
            state[os.path.relpath(full, path)] = (st.st_mode, st.st_uid, st.st_size, what)
    return state


def tmpdir():
    d = tempfile.mkdtemp(prefix="microscope-e2e-")
    atexit.register(shutil.rmtree, d, True)
    return d


def run(args, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    kw.setdefault("timeout", 120)
    return subprocess.run(args, **kw)


def record(out, command, extra=(), expect_rc=0):
    p = run([MICROSCOPE, "record", "-q", "-o", out, *extra, "--", *command])
    if expect_rc is not None and p.returncode != expect_rc:
        fail("record %s exited %d (want %d): %s" % (command, p.returncode, expect_rc, p.stderr))
    return p


def make_capture(out, shape):
    """A capture shaped like a recording of a fixture, built without perf
    (tests/tools/capture_make.cc lists the shapes)."""
    p = run([os.environ["CAPTURE_MAKE"], out, shape])
    if p.returncode != 0:
        fail("capture_make %s exited %d: %s" % (shape, p.returncode, p.stderr))


def report(path, *extra):
    p = run([MICROSCOPE, "report", "--json", *extra, path])
    if p.returncode != 0:
        fail("report %s exited %d: %s" % (path, p.returncode, p.stderr))
    return json.loads(p.stdout)


def functions(rep):
    """function name -> (self samples, total samples), from the flat table."""
    return {f["function"]: (f["self"]["samples"], f["total"]["samples"]) for f in rep["functions"]}


def tree_paths(rep):
    """Every root-to-node path of function names in the call tree, with its
    total samples: {("main", "run", "hot"): 123, ...}."""
    out = {}

    def walk(node, prefix):
        path = prefix + (node["function"],)
        out[path] = out.get(path, 0) + node["total"]["samples"]
        for c in node["children"]:
            walk(c, path)

    for r in rep.get("tree", []):
        walk(r, ())
    return out


def samples_under_chain(rep, chain):
    """Samples of tree nodes whose path ends with `chain` (a contiguous run
    of callers ending at the last function)."""
    chain = tuple(chain)
    return sum(v for p, v in tree_paths(rep).items() if p[-len(chain):] == chain)


def leaf_samples(rep, leaf):
    """(path, total samples) of every tree node of function `leaf` (its
    inlined callees, such as burn_units, are below it)."""
    out = []

    def walk(node, prefix):
        path = prefix + (node["function"],)
        if node["function"] == leaf and node["total"]["samples"]:
            out.append((path, node["total"]["samples"]))
            return
        for c in node["children"]:
            walk(c, path)

    for r in rep["tree"]:
        walk(r, ())
    return out


def perf_user_stacks(data):
    """Each sample of a perf.data file as its user frames (address, symbol),
    leaf first, from `perf script --no-inline` (frames as unwound, without
    inlined functions); kernel frames are left out."""
    out = run(["perf", "script", "--no-inline", "-i", data, "-F", "ip,sym,dso"], timeout=600).stdout
    stacks = []
    for block in out.split("\n\n"):
        frames = []
        for line in block.strip().splitlines():
            parts = line.split(None, 1)
            if len(parts) < 2 or "[kernel.kallsyms]" in parts[1]:
                continue
            frames.append((int(parts[0], 16), parts[1].rpartition(" (")[0].strip()))
        stacks.append(frames)
    return stacks
