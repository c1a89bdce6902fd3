"""Python frames walked by BPF at each sample and spliced into the native
stacks (record --python bpf), on Debian's python3.11 (an interpreter with
libpython linked in), on Debian's shared libpython3.11 run by a program of
its own (tests/fixtures/python/launch.c), and on 3.13, 3.14 and 3.15 from
Debian's newer suites (scripts/fetch-python).

Each fixture (tests/fixtures/python/workload.py) does a fixed amount of work
with a known split: a() 75% / b() 25%; recursion 50 calls deep; three
threads 1:2:3; libc's qsort calling a Python comparison through ctypes;
multiprocessing children; a module imported mid-run; an exec into another
CPython. The shares must be within 3 points of the split (the threads'
within 4 standard deviations when samples are few), and on 3.11 and 3.15
within 5 of cProfile's cumulative shares of the same fixture; on 3.14 within
5 of perf's (perf record -g of the fixture run with -X perf, which names
Python functions through CPython's perf map). What a release lays out
differently runs on each; the recorder's own mechanisms (fork, off-CPU and
system calls, a late import) on 3.11 and 3.15 (below). Lines fall inside the right
function, the Python chains sit where the native code runs them, and
nearly every sample's Python frames are all named."""
import json
import re
import signal

from common import *

require_perf()
pythons = {"3.11": [os.path.realpath("/usr/bin/python3.11")],
           "3.11-shared": [fixture("pylaunch")]}
for version, path in fetch_pythons().items():
    pythons[version] = [path]
check(os.path.exists(pythons["3.11"][0]), "Debian's python3.11 is installed")
WORKLOAD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "python",
                        "workload.py")
WORKLOAD = os.path.realpath(WORKLOAD)
d = tmpdir()
# Twice perf's default rate over half the work: the samples of a run at 999 Hz
# with SCALE 2 in half the time (the fixtures' work is fixed, not timed).
SCALE = "1"
RATE = "1999"
with open(WORKLOAD) as f:
    DEFS = {m.group(1): i + 1 for i, line in enumerate(f) for m in [re.match(r"def (\w+)\(", line)] if m}


def record_fixture(name, python, mode, env=None, extra=(), scale=SCALE, printed=None):
    """The capture of WORKLOAD `mode`; what the fixture printed is appended
    to `printed` when given."""
    cap = os.path.join(d, "%s-%s.mscap" % (name, mode))
    p = run([MICROSCOPE, "record", "-q", "--python", "bpf", "-F", RATE, "-o", cap, *extra, "--",
             *python, WORKLOAD, mode, scale], env=env, timeout=300)
    if p.returncode != 0:
        fail("%s %s: record exited %d: %s" % (name, mode, p.returncode, p.stderr[-2000:]))
    if printed is not None:
        printed.append(p.stdout)
    return cap


def tree(cap, *extra):
    return tree_paths(report(cap, "--tree", "--min-percent", "0", *extra))


def under(paths, fn):
    """Samples whose stack holds `fn` (outermost occurrence only)."""
    return sum(v for p, v in paths.items() if p[-1] == fn and fn not in p[:-1])


NOT_ON = ("[unknown Python: sampled before the walker was on this process]",
          "[unknown Python: the interpreter was not laid out (yet)]")


def named_share(rep):
    """The share of samples with every Python frame named, the unnamed
    ones' count by reason, and the time the walker was not yet on. Samples
    taken before the walker was on are a gap the capture states (the
    shared libpython is laid out from its mapping record, which a loaded
    recorder reads late: 122 such samples in a CI run), left out of the
    share when the capture has that gap; the gap itself is held apart."""
    unknown = {f["function"]: f["total"]["samples"] for f in rep["functions"]
               if f["function"].startswith("[unknown Python")}
    gap_ns = sum(g["ns"] for g in rep["header"].get("gaps", []) if g["cause"] == "walker not yet on")
    late = sum(v for k, v in unknown.items() if k in NOT_ON) if gap_ns else 0
    unnamed = sum(unknown.values()) - late
    return 1 - unnamed / max(1, rep["header"]["samples"] - late), unknown, gap_ns


def cprofile_share(python, mode, fns):
    """Cumulative time of each of `fns` (workload functions) under cProfile."""
    out = os.path.join(d, "prof")
    p = run([*python, "-m", "cProfile", "-o", out, WORKLOAD, mode, SCALE], timeout=300)
    check(p.returncode == 0, "cProfile runs the fixture: %s" % p.stderr[-300:])
    code = ("import pstats, sys\n"
            "s = pstats.Stats(sys.argv[1])\n"
            "for (f, l, n), (cc, nc, tt, ct, callers) in s.stats.items():\n"
            "    print(n, f, ct)\n")
    rows = run([*python, "-c", code, out]).stdout.split("\n")
    cum = {}
    for row in rows:
        parts = row.split(" ")
        if len(parts) == 3 and parts[1].endswith("workload.py") and parts[0] in fns:
            cum[parts[0]] = float(parts[2])
    total = sum(cum.get(f, 0) for f in fns)
    return {f: cum.get(f, 0) / total for f in fns} if total else {}


def perf_share(python, mode, fns):
    """Shares of `fns` among perf's samples of the fixture run with -X perf,
    by the innermost Python function of each sample."""
    data = os.path.join(d, "perf.data")
    # DWARF: this CPython has no frame pointers. The unwinding stops at the
    # innermost trampoline, which names the innermost Python function.
    p = run(["perf", "record", "-q", "--call-graph", "dwarf", "-F", RATE, "-o", data, "--",
             *python, "-X", "perf", WORKLOAD, mode, SCALE], timeout=300)
    check(p.returncode == 0, "perf records the fixture with -X perf: %s" % p.stderr[-300:])
    script = run(["perf", "script", "-i", data, "-F", "ip,sym"], timeout=600).stdout
    counts = {f: 0 for f in fns}
    for block in script.split("\n\n"):
        m = re.search(r"py::([\w<>.]+):", block)  # the innermost Python function
        if m and m.group(1) in counts:
            counts[m.group(1)] += 1
    total = sum(counts.values())
    return {f: counts[f] / total for f in fns} if total else {}


def near(got, want, points):
    return abs(got - want) <= points / 100.0


names = {}
# Under the sanitizers (a recorder some three times slower) the newest only:
# the recorder's own code is the same for each release, each release's
# layout is checked by the optimized build's run of this test, and 3.11's
# way of splicing (entry frames, no shims) by unit record under the
# sanitizers too.
CHECKED = ["3.15"] if SANITIZED else sorted(pythons)
# What each release lays out differently is checked on every release: names,
# lines and the split; recursion; thread states and the GIL; the eval loop's
# entries under a C call; exec. Mechanisms that are the recorder's alone
# (fork, the walk at off-CPU and system-call events, a module imported late)
# and the peers' agreement run on the oldest and newest releases: on each
# release they took 60 of this test's 163 s in CI. The shared libpython is
# a matter of where the symbols are: the split and qsort check it.
EVERY = ["3.11", CHECKED[-1]]
SHARED = ("split", "qsort")
for name, python in sorted((n, p) for n, p in pythons.items() if n in CHECKED):
    # a() 75% / b() 25%.
    cap = record_fixture(name, python, "split")
    rep = report(cap, "--min-percent", "0")
    paths = tree(cap)
    a, b = under(paths, "a"), under(paths, "b")
    share = a / max(1, a + b)
    check(a + b > 500 and near(share, 0.75, 3),
          "%s: a() %.1f%% of a()+b() (%d samples; want 75 +- 3)" % (name, 100 * share, a + b))
    check(any(p[-3:] == ("<module>", "split", "a") for p in paths),
          "%s: the chain <module> > split > a" % name)
    mod = [f for f in rep["functions"] if f["function"] == "a"]
    check(mod and mod[0]["module"] == WORKLOAD,
          "%s: a's file is the workload's whole path: %s" % (name, mod[:1]))
    # Lines: every sample of a() and b() is on its own loop.
    lines = {}
    for f in report(cap, "--granularity", "line", "--min-percent", "0")["functions"]:
        m = re.match(r"(\w+) workload\.py:(\d+)$", f["function"])
        if m:
            lines.setdefault(m.group(1), {})[int(m.group(2))] = f["self"]["samples"]
    for fn in ("a", "b"):
        body = set(range(DEFS[fn], DEFS[fn] + 5))  # def, x = 0, for, x += i, return
        got = set(l for l, n in lines.get(fn, {}).items() if n > 0)
        check(got and got <= body and got & {DEFS[fn] + 2, DEFS[fn] + 3},
              "%s: %s's samples on its own lines: %s" % (name, fn, sorted(got)))
    share_named, unknown, not_on_ns = named_share(rep)
    names[name] = share_named
    check(share_named >= 0.95 and not_on_ns <= 300e6,
          "%s: %.2f%% of samples have every Python frame named, the walker not on for %.0f ms "
          "(unknown: %s; the walker's counts: %s)" %
          (name, 100 * share_named, not_on_ns / 1e6, unknown, rep["header"]["sources"].get("python")))
    if name in EVERY and not SANITIZED:  # the peers run no code of ours
        prof = cprofile_share(python, "split", ["a", "b"])
        check(prof and near(share, prof["a"], 5),
              "%s: cProfile's cumulative share of a() %.1f%%, ours %.1f%% (within 5)" %
              (name, 100 * prof.get("a", 0), 100 * share))
    if name == "3.14":  # -X perf is 3.12 on; one release is the peer check
        peer = perf_share(python, "split", ["a", "b"])
        check(peer and near(share, peer["a"], 5),
              "%s: perf -X perf's share of a() %.1f%%, ours %.1f%% (within 5)" %
              (name, 100 * peer.get("a", 0), 100 * share))

    if name != "3.11-shared":
        # Recursion 50 deep.
        paths = tree(record_fixture(name, python, "recursion"))
        depth = max((p.count("down") for p in paths), default=0)
        check(depth == 50, "%s: down() nests 50 deep (deepest %d)" % (name, depth))

        # Threads 1:2:3, by their samples holding the GIL (a thread waiting for
        # it also runs, waking every 5 ms to ask for it, and that is not its
        # work). The fixture's threads take turns on one CPU, one slice at a
        # time, and print the CPU time their slices took: the shares are held to
        # those. The same work does not always cost the same CPU time on a
        # shared machine (once 14.8 39.3 45.9 where 1:2:3 was expected, against
        # 16.3-17.4, 33.1-33.6 and 49.4-50.6 over two runs of 3.11 to 3.15).
        # The tolerance is 3 points, or 4 standard deviations of the share when
        # samples are few; the CPU times must be near 1:2:3 too (within 10
        # points), so an even split (33 each) or swapped threads fail.
        printed = []
        cap = record_fixture(name, python, "threads", printed=printed)
        spent = re.search(r"slices cpu_ns t1=(\d+) t2=(\d+) t3=(\d+)", printed[0])
        check(spent is not None, "%s: the threads fixture printed its slices' CPU time: %r" % (name, printed[0][-200:]))
        spent = [int(x) for x in spent.groups()]
        want = [x / sum(spent) for x in spent]
        check(all(near(w, k / 6, 10) for w, k in zip(want, (1, 2, 3))),
              "%s: the slices took CPU 1:2:3 within 10 points: %s" % (name, " ".join("%.1f" % (100 * w) for w in want)))
        held, named = {}, {}
        for th in report(cap, "--threads")["threads"]:
            runs = [f for f in ("t1", "t2", "t3") if under(tree(cap, "--thread", str(th["tid"])), f) > 0]
            if len(runs) == 1 and th.get("gil"):
                held[runs[0]] = th["gil"]["held_samples"]
            named[th["tid"]] = (runs[0] if len(runs) == 1 else "", th["name"])
        # Each thread under the name threading gave it (the fixture names
        # them after their work): 3.11 (Debian's, and its shared
        # libpython) from its table, 3.13 on from their debug offsets.
        check(sorted(n for _, n in named.values()) == ["MainThread", "t1", "t2", "t3"] and
              all(n == r for r, n in named.values() if r),
              "%s: threads named as threading names them: %s" % (name, sorted(named.values())))
        t = [held.get(f, 0) for f in ("t1", "t2", "t3")]
        shares = [x / max(1, sum(t)) for x in t]
        tol = [max(3, 400 * (w * (1 - w) / max(1, sum(t))) ** 0.5) for w in want]
        check(sum(t) > 500 and all(near(s, w, p) for s, w, p in zip(shares, want, tol)),
              "%s: threads t1 t2 t3 at %s of %d samples (their slices' CPU time: %s +- %s)" %
              (name, " ".join("%.1f" % (100 * s) for s in shares), sum(t),
               " ".join("%.1f" % (100 * w) for w in want), " ".join("%.1f" % p for p in tol)))

    # A C callback into Python: py_compare under libc's qsort under sort_with_c.
    paths = tree(record_fixture(name, python, "qsort"))
    def qsort_at(p):  # glibc's qsort runs qsort_r
        return next((i for i, f in enumerate(p) if f in ("qsort", "qsort_r")), -1)
    nested = sum(v for p, v in paths.items() if p[-1] == "py_compare" and "sort_with_c" in p and
                 p.index("sort_with_c") < qsort_at(p))
    total = sum(v for p, v in paths.items() if p[-1] == "py_compare")
    check(total > 50 and nested >= 0.9 * total,
          "%s: py_compare under qsort under sort_with_c in %d of %d samples" % (name, nested, total))
    if name == "3.13":
        # --look python: from <module> in, qsort where sort_with_c called it,
        # none of the interpreter's frames; --look native: no Python frames.
        cap = os.path.join(d, "%s-qsort.mscap" % name)
        py = tree(cap, "--look", "python")
        # A stack the walker found no Python frame in stays whole (the
        # interpreter's frames included): a sample taken while the eval loop
        # was entered but its frame not yet linked is one. Such samples must
        # stay rare; the chains with Python frames must never show them.
        is_interp = lambda f: f.startswith("_PyEval") or f == "PyEval_EvalCode"
        interp = [p for p in py if is_interp(p[-1]) and not any(is_interp(f) for f in p[:-1])]
        interp_samples = sum(py[p] for p in interp)
        mixed = [p for p in py if any(is_interp(f) for f in p) and
                 any(f in DEFS or f == "<module>" for f in p)]
        chain = {p: v for p, v in py.items() if p[-1] == "py_compare" and v > 0}
        whole = {p: v for p, v in chain.items() if p[0] == "<module>" and 0 <= qsort_at(p)}
        shown = max(whole, key=whole.get) if whole else ()
        check(not mixed and interp_samples <= 0.005 * sum(chain.values()) and
              sum(whole.values()) >= 0.9 * sum(chain.values()) > 0,
              "%s: --look python: %s (%d of %d samples), no interpreter frames beside Python "
              "frames (%d paths with both: %s), %d samples with no Python frame kept whole (%s)" %
              (name, " > ".join(f for f in shown if "+0x" not in f), sum(whole.values()),
               sum(chain.values()), len(mixed), " > ".join(mixed[0]) if mixed else "-",
               interp_samples, " > ".join(max(interp, key=py.get)) if interp else "-"))
        native = tree(cap, "--look", "native")
        check(not any("py_compare" in p or "sort_with_c" in p for p in native) and
              any("_PyEval_EvalFrameDefault" in p and qsort_at(p) >= 0 for p in native),
              "%s: --look native: no Python frames, the eval loop under and over qsort" % name)
        # Chrome's trace, folded stacks and speedscope carry them too.
        for fmt, name_of in (("chrome", lambda d: {e.get("name") for e in d["traceEvents"]}),
                             ("speedscope", lambda d: {f["name"] for f in d["shared"]["frames"]})):
            out = os.path.join(d, "qsort." + fmt)
            run([MICROSCOPE, "convert", cap, "--to", fmt, "-o", out])
            with open(out) as f:
                got = name_of(json.load(f))
            check({"py_compare", "sort_with_c", "<module>"} <= got,
                  "%s: %s carries the Python frames" % (name, fmt))
        out = os.path.join(d, "qsort.folded")
        run([MICROSCOPE, "convert", cap, "--to", "folded", "-o", out])
        with open(out) as f:
            check(any(";sort_with_c;" in l and ";py_compare" in l for l in f),
                  "%s: folded stacks carry the Python frames" % name)
        # Google's pprof reads the Python frames: function, file and line.
        pb = os.path.join(d, "qsort.pb.gz")
        run([MICROSCOPE, "convert", cap, "--to", "pprof", "-o", pb])
        if os.environ.get("PPROF"):
            top = run([os.environ["PPROF"], "-lines", "-top", "-nodecount", "200", pb]).stdout
            check(re.search(r"py_compare \S*workload\.py:\d+", top) is not None,
                  "%s: Google pprof names py_compare with its file and line" % name)

    if name in EVERY:
        # multiprocessing (fork) children: each laid out as its parent was.
        cap = record_fixture(name, python, "children")
        rep = report(cap, "--min-percent", "0")
        by_pid = {}
        for pid in {p["pid"] for p in rep["header"]["processes"]}:
            got = tree(cap, "--pid", str(pid))
            by_pid[pid] = under(got, "child_work")
        workers = [pid for pid, n in by_pid.items() if n > 50]
        check(len(workers) >= 2 and rep["header"]["processes"] and
              not by_pid.get(rep["header"]["target_pid"]),
              "%s: child_work named in %d child processes: %s" % (name, len(workers), by_pid))

        # Blocked time: sleeper() in time.sleep 20 x 10 ms, waiter() on a
        # threading.Lock for as long; off-CPU intervals and slow system calls
        # carry the Python frames of the moment.
        lagged = str(int(2 * LAG_FACTOR))  # blocked's head start
        cap = record_fixture(name, python, "blocked", extra=("--off-cpu",), scale=lagged)
        off = {f["function"]: f["total"]["value"] for f in
               report(cap, "--metric", "offcpu", "--min-percent", "0")["functions"]}
        check(off.get("sleeper", 0) >= 150e6 and off.get("waiter", 0) >= 150e6,
              "%s: off CPU under sleeper() %.0f ms and waiter() %.0f ms (each 200 by design)" %
              (name, off.get("sleeper", 0) / 1e6, off.get("waiter", 0) / 1e6))
        cap = record_fixture(name, python, "blocked", extra=("--syscalls", "--syscall-stack-min", "5ms"),
                             scale=lagged)
        slow = report(cap, "--syscalls")["syscalls"]["slowest"]
        def called_from(fn):
            return [c for c in slow if fn in c["stack"]]
        check(called_from("sleeper") and called_from("waiter") and
              all(c["syscall"] == "futex" for c in called_from("waiter")),
              "%s: slow calls name their Python callers: sleeper %s, waiter %s" %
              (name, sorted({c["syscall"] for c in called_from("sleeper")}),
               sorted({c["syscall"] for c in called_from("waiter")})))

    if name != "3.11-shared":
        # The GIL: holder() runs Python, releaser() compresses with zlib, which
        # releases the GIL; report --threads gives each thread's share held.
        cap = record_fixture(name, python, "gil")
        rep = report(cap, "--threads")
        target = rep["header"]["target_pid"]
        gil = {t["tid"]: t.get("gil", {}) for t in rep["threads"]}
        main = gil.get(target, {}).get("held_percent", -1)
        others = [g.get("held_percent", -1) for tid, g in gil.items() if tid != target and g]
        check(main >= 90 and len(others) == 1 and 0 <= others[0] <= 30,
              "%s: GIL held in %.1f%% of holder()'s samples, %s of releaser()'s" % (name, main, others))
        # --gil keeps the samples of either side: as many as the threads table
        # counts, holder() in the held ones and releaser()'s zlib in the others.
        held_n = sum(t.get("gil", {}).get("held_samples", 0) for t in rep["threads"])
        held, released = (report(cap, "--gil", side, "--top", "100000") for side in ("held", "released"))
        fh, fr = functions(held), functions(released)
        # The filter's header line: "label python.gil=held: N samples (...) kept".
        kept = [int(re.search(r": (\d+) samples", l["text"]).group(1))
                for r in (held, released) for l in r["header"]["lines"] if l["label"] == "filter"]
        check(kept[0] == held_n and held_n + kept[1] <= rep["header"]["samples"] and
              fh.get("holder", (0, 0))[1] > 5 * fh.get("releaser", (0, 0))[1] and
              fr.get("releaser", (0, 0))[1] > fr.get("holder", (0, 0))[1],
              "%s: --gil held keeps %d samples (threads table: %d; holder %s, releaser %s), --gil "
              "released %d (holder %s, releaser %s)" %
              (name, kept[0], held_n, fh.get("holder"), fh.get("releaser"), kept[1], fr.get("holder"),
               fr.get("releaser")))

        # --look python leaves out the C library's and the kernel's leaves
        # below the Python functions (their time is the caller's), and keeps
        # them with --native-leaves.
        def system_self(*extra):
            rep = report(cap, "--look", "python", "--focus", "holder|releaser", "--top", "100000",
                         *extra)
            return sum(f["self"]["samples"] for f in rep["functions"]
                       if f["module"] in ("[kernel.kallsyms]", "[vdso]") or f["module"].startswith("libc"))
        dropped, kept = system_self(), system_self("--native-leaves")
        check(dropped == 0 and kept >= 0,
              "%s: --look python: %d samples end in the C library or kernel (%d with --native-leaves)"
              % (name, dropped, kept))

    if name in ("3.11", "3.13"):
        # A thread listed by the interpreter before threading knows it: the
        # walker reads the names again until it is named (it read them when
        # the thread came, and without a thread coming or going read them
        # only every 0.5 s, after this one had ended). 3.14 on give a
        # thread's name to the system too, which names it whatever the
        # walker reads.
        rep = report(record_fixture(name, python, "late_name"), "--threads")
        got = sorted(t["name"] for t in rep["threads"])
        check(got == ["MainThread", "late"],
              "%s: a thread threading learned of late is named: %s (the walker's counts: %s)"
              % (name, got, rep["header"]["sources"].get("python", {}).get("values")))

    if name in EVERY:
        # A module written and imported mid-run.
        rep = report(record_fixture(name, python, "imported"), "--min-percent", "0")
        late = [f for f in rep["functions"] if f["function"] == "late_work"]
        check(late and late[0]["module"].endswith("/late.py") and late[0]["total"]["samples"] > 100,
              "%s: late_work named from its late.py: %s" % (name, late[:1]))

# Attached to a running interpreter (record --pid): the sampling events
# start once the walker is on and has laid the process out from its
# mappings, so the first samples are walked (16-22% of a 1 s attach were
# "sampled before the walker was on" when they started first).
def attach(version, seconds, work):
    """A recording of `seconds` attached to `version` running the split
    fixture for `work` (longer than the recording, which is what is checked)."""
    target = subprocess.Popen([*pythons[version], WORKLOAD, "split", work], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        cap = os.path.join(d, "attach-%s.mscap" % version)
        p = run([MICROSCOPE, "record", "-q", "--python", "bpf", "--pid", str(target.pid),
                 "--duration", "%ds" % seconds, "-o", cap])
        check(p.returncode == 0, "record --pid of a running %s: %s" % (version, p.stderr[-300:]))
    finally:
        target.kill()
        target.wait()
    return cap


# 2 s: on a loaded machine the target gets half a CPU, and the samples
# before the walker is on come off what is left (425 of a() and b() in 1 s
# once, beside two CPU burners).
cap = attach("3.14", 2, "6")
rep = report(cap, "--min-percent", "0")
paths = tree(cap)
a, b = under(paths, "a"), under(paths, "b")
markers = {f["function"]: f["total"]["samples"] for f in rep["functions"]
           if f["function"].startswith("[unknown Python")}
check(a + b > 500 and near(a / (a + b), 0.75, 3) and
      set(markers) <= {"[unknown Python: 1 of 1 Python activations not found in the native stack]"} and
      sum(markers.values()) < 0.01 * rep["header"]["samples"],
      "attach: a() %.1f%% of a()+b() (%d samples); unknown: %s" % (100 * a / max(1, a + b), a + b,
                                                                   markers))


def walker_gaps(what, cap):
    """Samples taken before the walker was on are one gap of their process,
    and only they are: none drawn where every stack was walked."""
    rep = report(cap, "--min-percent", "0")
    before = sum(f["total"]["samples"] for f in rep["functions"]
                 if f["function"] == "[unknown Python: sampled before the walker was on this process]")
    gaps = [g for g in rep["header"].get("gaps", []) if g["cause"] == "walker not yet on"]
    check(len(gaps) == (1 if before > 0 else 0),
          "%s: %d samples before the walker was on, gaps %s" % (what, before, gaps))
    return before


walker_gaps("attach to 3.14", cap)

# A walker made late: the recorder stopped (SIGSTOP) while a program that
# is not Python by its name or image (pylaunch, libpython linked in: its
# exec is not held) starts its interpreter and runs, so that the recorder
# lays the process out only once it runs again, 0.4 s later. The samples
# with interpreter frames before then are one gap of the process, drawn in
# the lanes and the Chrome export; the stacks after it are walked.
fifo = os.path.join(d, "go")
os.mkfifo(fifo)
cap = os.path.join(d, "late-walker.mscap")
rec = subprocess.Popen([MICROSCOPE, "record", "-q", "--python", "bpf", "-F", RATE, "-o", cap, "--",
                        "sh", "-c", 'read go < "$0"; exec "$@"', fifo, *pythons["3.11-shared"], WORKLOAD,
                        "split", SCALE], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
try:
    wait_recording(rec)
    os.kill(rec.pid, signal.SIGSTOP)
    try:
        with open(fifo, "w") as f:
            f.write("go\n")
        time.sleep(0.4)
    finally:
        os.kill(rec.pid, signal.SIGCONT)
    _, se = rec.communicate(timeout=300)
    check(rec.returncode == 0, "the recorder stopped and continued records (%s)" % se[-300:])
finally:
    if rec.poll() is None:
        rec.kill()
        rec.wait()
before = walker_gaps("a walker made late", cap)
h = report(cap)["header"]
late = [g for g in h.get("gaps", []) if g["cause"] == "walker not yet on"]
pylaunch = [p["pid"] for p in h["processes"] if p["command"] == "pylaunch"]
lanes = report(cap, "--lanes")["lanes"]
rows = [r for r in lanes.get("gap_rows", []) if r["cause"] == "walker not yet on"]
check(before >= 50 and late and 0.05e9 <= late[0]["ns"] <= 5e9 and len(rows) == 1 and
      rows[0].get("pid") in pylaunch,
      "a late walker: %d samples before it was on, a gap of the process (%s; %s, pylaunch %s)" %
      (before, late, rows, pylaunch))
chrome = os.path.join(d, "late-walker.json")
p = run([MICROSCOPE, "convert", cap, "--to", "chrome", "-o", chrome])
spans = [e for e in json.load(open(chrome))["traceEvents"] if e.get("cat") == "gap"]
check(p.returncode == 0 and [e["name"] for e in spans] == ["gap: walker not yet on"],
      "the Chrome export labels it: %s" % spans)
text = run([MICROSCOPE, "report", cap, "--lanes"]).stdout
check(re.search(r"^\s+gaps\s+\|[^|]*W", text, re.M), "report --lanes marks its columns W")

# --python auto on a program that does not look like Python but launches
# others (a shell that execs one): the walker starts with the recording and
# holds the interpreter at its exec until it is laid out; a recording of no
# Python at all has it off, saying why.
cap = os.path.join(d, "lazy.mscap")
# Twice the work: the recorder names code objects as it goes, and under the
# sanitizers a short run's last ones were read after the process exited.
# The recorder starts with SIGCHLD blocked, as a CI runner gave it: the
# hold is the recorder's own, not luck of what started it (a SIGCHLD
# blocked in the parent had the exec run unheld, 90 samples unwalked).
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
try:
    record(cap, ["sh", "-c", "exec %s %s split 2" % (pythons["3.14"][0], WORKLOAD)], ["-F", RATE])
finally:
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGCHLD})
rep = report(cap, "--min-percent", "0")
paths = tree(cap)
a, b = under(paths, "a"), under(paths, "b")
early = sum(f["total"]["samples"] for f in rep["functions"]
            if f["function"].startswith("[unknown Python: sampled before"))
held = rep["header"]["sources"]["python"]["values"]["execs_held"]
check(a + b > 500 and near(a / (a + b), 0.75, 3) and early == 0 and held == 1,
      "auto, through sh: a() %.1f%% of a()+b() (%d samples), %d sampled before the walker was on, "
      "%d exec held %s" % (100 * a / max(1, a + b), a + b, early, held,
                           [q for q in rep["header"].get("problems", []) if "held" in q["kind"]]))
# A parent that reads its children's stops (SIGCHLD blocked, as a program
# reading them through signalfd has it) is not given a stopped child: its
# Python child runs unheld, and the capture says why. The recorder's own
# child is held whatever its threads' masks are (above).
cap = os.path.join(d, "hears.mscap")
parent = ("import signal, subprocess, sys; signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD}); "
          "subprocess.run([sys.argv[1], sys.argv[2], 'split', '1'], check=True)")
record(cap, ["sh", "-c", 'exec "$0" -c "$1" "$2" "$3"', pythons["3.14"][0], parent, pythons["3.13"][0],
             WORKLOAD], ["-F", RATE])
rep = report(cap, "--min-percent", "0")
held = rep["header"]["sources"]["python"]["values"]["execs_held"]
unheld = [q for q in rep["header"].get("problems", []) if "not held" in q["kind"]]
check(held == 1 and len(unheld) == 1 and unheld[0]["count"] == 1 and
      "its parent hears its stops" in unheld[0]["example"] and under(tree(cap), "a") > 0,
      "a parent that hears its child's stops: %d exec held (the recorder's child), not its "
      "child's: %s" % (held, unheld))
cap = os.path.join(d, "native.mscap")
record(cap, [fixture("split"), "50"])
notes = report(cap)["header"]["notes"]
check(not any("Python" in n for n in notes), "auto on a native program: no walker, no Python notes")

# An exec into another CPython: each laid out again. (3.11 into 3.13, 3.13
# into 3.14, 3.14 into 3.15, 3.15 into 3.11.)
order = [n for n in ["3.11", "3.13", "3.14", "3.15"] if n in CHECKED]
for i, name in enumerate(order):
    other = pythons[order[(i + 1) % len(order)]][0]
    env = dict(os.environ, PYTHON_EXEC=other)
    # The code objects before the exec are read before it (LAG_FACTOR).
    cap = record_fixture(name + "-exec", pythons[name], "exec", env=env,
                         scale=str(int(2 * LAG_FACTOR)))
    rep = report(cap, "--min-percent", "0")
    fns = {f["function"]: f["total"]["samples"] for f in rep["functions"]}
    check(fns.get("exec_", 0) > 100 and fns.get("exec_target", 0) > 100,
          "%s exec into %s: exec_ (%d) before and exec_target (%d) after, both named" %
          (name, os.path.basename(other), fns.get("exec_", 0), fns.get("exec_target", 0)))

print("named shares: " + " ".join("%s %.2f%%" % (k, 100 * v) for k, v in sorted(names.items())))
