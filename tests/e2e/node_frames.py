"""JavaScript frames walked by BPF at each sample and spliced into the
native stacks (record --node bpf), on Debian's Node 20 and on Node 22, 24
and 26 from the npm registry (scripts/fetch-node).

The fixture (tests/fixtures/node/workload.js) does a fixed amount of work:
top()/mid()/leaf() 10/30/60 of it in their own loops; recursion 40 calls
deep beside a worker thread; crypto.pbkdf2 on the libuv pool. Each function's
share of the JavaScript samples must be within 15 points of perf's on the
oldest and newest release (perf record -g of another run, which names JIT
code through node's perf map) and on each of the split, both run with --perf-basic-prof (a run's shares move from run
to run: by up to 10 points in the perf map's names, up to 13 in the
walker's, which is not explained yet); node
--cpu-prof must name the same functions (its shares are printed beside
ours: they are not held to 5 points, its own runs disagreeing by up to 15
on 22 to 26). The
JavaScript frames sit, callee first, where node's JS entry runs them;
interpreted frames that called out have the line of the call (node
--jitless: every frame interpreted), and the innermost the line its
bytecode handler runs (from V8's interpreter registers) or its call's,
whose hottest line is --cpu-prof's in the same run (its ticks at
the callers' call lines left out); optimized frames
(TurboFan) and baseline ones (--always-sparkplug --max-opt=1) have the
line their code runs (the loop's, the call's); recursion
keeps its depth; the worker's thread has its own JavaScript frames and,
from Node 24 on, the worker's name in full; the
pool threads, which run no JavaScript, carry no JavaScript frame and no
unknown marker (this, -g dwarf through V8's code and an addon's callback
and a thread named 6,000 times, whose names are heard up to a bound, are
the recorder's own mechanisms: on the oldest and newest release); and nearly every JavaScript frame is named."""
import re
import glob
import json
from collections import Counter

from common import *

PPROF = os.environ.get("PPROF")

require_perf()
nodes = fetch_nodes()
WORKLOAD = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "fixtures", "node", "workload.js"))
d = tmpdir()
FNS = ["top", "mid", "leaf"]
SCALE = "1"


SPLIT = {"top": 0.1, "mid": 0.3, "leaf": 0.6}
with open(WORKLOAD) as f:
    SOURCE = f.read().split("\n")
DEFS = {m.group(1): i + 1 for i, l in enumerate(SOURCE) for m in [re.match(r"function (\w+)\(", l)] if m}
CALL_LINE = {fn: 1 + next(i for i, l in enumerate(SOURCE) if re.search(pat, l))
             for fn, pat in (("top", r"return x \^ mid\(x\)"), ("mid", r"return x \^ leaf\(x\)"))}


def record_fixture(major, node, mode, node_flags=(), scale=SCALE, args=(), record_args=()):
    cap = os.path.join(d, "%s-%s.mscap" % (major, mode))
    p = run([MICROSCOPE, "record", "-q", "--node", "bpf", *record_args, "-o", cap, "--", node, *node_flags,
             WORKLOAD, mode, scale, *args], timeout=300, cwd=d)  # node --perf-basic-prof logs there
    if p.returncode != 0:
        fail("node %s %s: record exited %d: %s" % (major, mode, p.returncode, p.stderr[-2000:]))
    return cap


def compiled_lines(major, what, cap, counter, lined=0.9):
    """Each work function's own samples with a line (at least `lined` of
    them) on its loop's line, and top's and mid's samples in their callee
    on their call's line, with the lines the capture counts under `counter`
    (from compiled code)."""
    own, total = {fn: Counter() for fn in FNS}, {fn: Counter() for fn in FNS}
    rep = report(cap, "--look", "js", "--granularity", "line", "--min-percent", "0")
    for f in rep["functions"]:
        m = re.match(r"(\w+)(?: workload\.js:(\d+))?$", f["function"])
        if m and m.group(1) in FNS:
            own[m.group(1)][int(m.group(2) or 0)] += f["self"]["samples"]
            total[m.group(1)][int(m.group(2) or 0)] += f["total"]["samples"]
    loop = {fn: DEFS[fn] + 2 for fn in FNS}  # function, let x, for
    called = {fn: sum(total[fn].values()) - sum(own[fn].values()) for fn in ("top", "mid")}
    values = rep["header"]["sources"]["node"]["values"]
    # A sample whose code V8 freed before the recorder read it (the
    # recorder seconds behind on a loaded machine: a sanitized CI run had
    # 641 of leaf()'s 676 so, its code's page gone, code_not_found 1,547)
    # has no line: left out, as many as the recording counts so, with 25
    # lined samples of each function at least. A recorder that fell behind
    # the whole program (more pcs without code than frames lined from code:
    # another sanitized CI run, code_not_found 2,827, mid() 10 samples
    # lined of 1,129) is held to where its lined samples are, 25 at least.
    freed = values["code_not_found"]
    behind = freed > values[counter]
    lined_own = lambda fn: sum(own[fn].values()) - own[fn][0]
    lined_called = lambda fn: sum(total[fn].values()) - total[fn][0] - lined_own(fn)
    if behind:
        enough = (sum(map(lined_own, FNS)) >= 25 and
                  all(total[fn][CALL_LINE[fn]] >= 0.9 * lined_called(fn) for fn in called))
    else:
        enough = (all(lined_own(fn) >= 25 and
                      lined_own(fn) >= lined * (sum(own[fn].values()) - min(own[fn][0], freed))
                      for fn in FNS) and
                  all(total[fn][CALL_LINE[fn]] >= 0.9 * called[fn] > 0 for fn in called))
    check(values[counter] > 300 and enough and
          all(own[fn][loop[fn]] >= 0.9 * lined_own(fn) for fn in FNS),
          "node %s: %s frames have lines (%d from their code): own samples on the loops' "
          "lines %s, callees' under the calls' lines %s: %s (lines: %s; problems: %s)" %
          (major, what, values[counter], loop, {fn: CALL_LINE[fn] for fn in called},
           {fn: dict(total[fn]) for fn in FNS},
           {k: v for k, v in values.items() if "line" in k or "code" in k or "source" in k},
           rep["header"]["problems"]))


def js_self_shares(cap):
    """Each fixture function's share of the samples whose innermost
    JavaScript frame is one of them (the js look's self)."""
    f = functions(report(cap, "--look", "js", "--min-percent", "0"))
    counts = {fn: sum(s for name, (s, t) in f.items() if name == fn) for fn in FNS}
    total = sum(counts.values())
    return {fn: counts[fn] / max(1, total) for fn in FNS}, total


def cpu_prof_shares(out):
    """The self shares of the run whose --cpu-prof wrote into `out`, and the
    functions it names."""
    written = glob.glob(os.path.join(out, "*.cpuprofile"))
    check(len(written) == 1, "node --cpu-prof wrote its profile (%s)" % written)
    prof = json.load(open(written[0]))
    name = {n["id"]: n["callFrame"]["functionName"] for n in prof["nodes"]}
    counts = Counter(name[s] for s in prof["samples"])
    total = sum(counts[fn] for fn in FNS)
    return {fn: counts[fn] / max(1, total) for fn in FNS}, set(n for n, c in counts.items() if c > 0)


def perf_shares(data):
    """Self shares of the JIT code perf named through node's perf map, and
    the script each name points at."""
    out = run(["perf", "script", "-i", data, "-F", "comm,ip,sym"], timeout=300).stdout
    counts, files = Counter(), {}
    for block in out.split("\n\n"):
        lines = block.strip().split("\n")
        if len(lines) < 2 or lines[0].strip().startswith("perf"):
            continue
        m = re.match(r"\s*[0-9a-f]+\s+JS:[*~^+'-]*(\w+) (\S+):\d+:\d+", lines[1])
        if m and m.group(1) in FNS:
            counts[m.group(1)] += 1
            files[m.group(1)] = m.group(2)
    total = sum(counts.values())
    return {fn: counts[fn] / max(1, total) for fn in FNS}, files


def unknown_share(rep):
    unknown = sum(f["total"]["samples"] for f in rep["functions"]
                  if f["function"].startswith("[unknown JavaScript"))
    js = sum(f["total"]["samples"] for f in rep["functions"] if f["function"] == "top")
    return unknown / max(1, js)


# NODE_MAJORS=24,26 checks only those (while working on one release). Under
# the sanitizers the newest only: the recorder's own code is the same for
# each release, whose layouts the optimized build's run checks.
majors = (os.environ["NODE_MAJORS"].split(",") if os.environ.get("NODE_MAJORS") else
          ["26"] if SANITIZED else nodes)
# What a release lays out differently (names, lines, recursion, workers,
# the entry) is checked on every release; the recorder's own mechanisms
# (-g dwarf through V8's code, an addon's callback, the pool threads, the
# pace at which a short program is named) and the shares against perf and
# the fixture's split on the oldest and newest: on every release they took
# 40 of this test's 182 s in CI, and the shares and the short program 17
# more of 159.
EVERY = [min(majors, key=int), max(majors, key=int)] if majors else []
for major, node in sorted((m, n) for m, n in nodes.items() if m in majors):
    r3 = lambda shares: {k: round(v, 3) for k, v in shares.items()}
    if major in EVERY:
        # Shares against perf's and the fixture's split: the sampling and
        # naming are the recorder's, which the other releases' checks below
        # (names, chains, lines) need no second run of.
        # Both profilers record node --perf-basic-prof (perf needs the map): V8
        # then tiers its code the same way run after run (without it, the
        # shares of one run move by several points).
        cap = record_fixture(major, node, "shares", ["--perf-basic-prof"], "2")
        ours, n = js_self_shares(cap)
        if not SANITIZED:  # perf runs no code of ours
            data = os.path.join(d, "perf.data")
            p = run(["perf", "record", "-q", "-g", "-o", data, "--", node, "--perf-basic-prof",
                     WORKLOAD, "shares", "2"], timeout=300, cwd=d)
            check(p.returncode == 0, "node %s: perf records the fixture: %s" % (major, p.stderr[-300:]))
            perf, files = perf_shares(data)
            for m in glob.glob("/tmp/perf-*.map"):  # node's, read by perf script above
                if os.path.getmtime(m) >= os.path.getmtime(cap) - 60:
                    os.unlink(m)
            # 15 points: the two runs are apart, and a run's shares move from run to
            # run (Node 20, 8 runs each: by the perf map's names leaf 0.53 to 0.63;
            # by the walker 0.56 to 0.73, once 12 points from perf's: not
            # explained yet, see the notes).
            check(n > 1000 and all(abs(ours[fn] - perf[fn]) <= 0.15 for fn in FNS) and
                  all(files.get(fn) == WORKLOAD for fn in FNS),
                  "node %s: self shares %s within 15 points of perf's %s, which names the same "
                  "functions in %s (%d samples)" % (major, r3(ours), r3(perf),
                                                   sorted(set(files.values())), n))
        check(n > 1000 and all(abs(ours[fn] - SPLIT[fn]) <= 0.15 for fn in FNS),
              "node %s: and within 15 points of the fixture's split %s" % (major, SPLIT))
    # As users run it (no perf map), for the checks below, with --cpu-prof
    # in the same run.
    prof_dir = os.path.join(d, "prof-%s" % major)
    cap = record_fixture(major, node, "shares", ["--cpu-prof", "--cpu-prof-dir", prof_dir])
    ours, n = js_self_shares(cap)
    # --cpu-prof names the same functions; its shares are printed, not
    # held to 5 points: on 22 to 26 its own runs disagree by up to 15 points
    # and its median of three leaned from leaf() to its callers, where perf and the
    # fixture's split agree with ours.
    theirs, names = cpu_prof_shares(prof_dir)
    check(all(fn in names for fn in FNS),
          "node %s: --cpu-prof names %s too; its shares %s, ours %s" %
          (major, FNS, r3(theirs), r3(ours)))
    js_paths = tree_paths(report(cap, "--tree", "--min-percent", "0", "--look", "js"))
    in_leaf = sum(v for p, v in js_paths.items() if p[-1] == "leaf")
    chain = sum(v for p, v in js_paths.items() if p[-3:] == ("top", "mid", "leaf"))
    rep = report(cap, "--tree", "--min-percent", "0")
    paths = tree_paths(rep)
    # The JS entry is a builtin: from Node 22 on, V8 runs its builtins from a
    # copy it maps from node's file into its code range, which the mapping
    # record binds to node's image (named, unwound by frame pointers).
    leafward = sum(v for p, v in paths.items() if p[-1] == "leaf" and "top" in p)
    entered = sum(v for p, v in paths.items() if p[-1] == "leaf" and "Builtins_JSEntry" in p and
                  "top" in p and p.index("Builtins_JSEntry") < p.index("top"))
    check(in_leaf > 0.4 * n and chain > 0.95 * in_leaf and entered > 0.95 * leafward,
          "node %s: leaf runs under mid under top (%d of %d samples in leaf), called through "
          "node's JS entry (%d of %d)" % (major, chain, in_leaf, entered, leafward))
    check(unknown_share(rep) < 0.02, "node %s: unknown JavaScript frames in %.1f%% of top's samples" %
          (major, 100 * unknown_share(rep)))
    # Lines of optimized frames (the work functions are TurboFan code by
    # then), from their code's source positions at the address each runs.
    compiled_lines(major, "optimized", cap, "frames_with_line_from_code")

    # A short program (0.3 s of JavaScript): its functions are named from
    # its memory before it exits, so the recorder must process its samples
    # while it runs (the first lookup in node's 100 MB executable, and 50 ms
    # rounds of draining, once held them up past its end: 89% unnamed; now
    # about 1%, more on a loaded machine, where the recorder falls behind).
    if major in EVERY:  # the recorder's pace, not a release's layout
        short = report(record_fixture(major, node, "shares", scale="%g" % (0.3 * LAG_FACTOR)))
        named = sum(f["self"]["samples"] for f in short["functions"] if f["function"] in FNS)
        reasons = {f["function"]: f["self"]["samples"] for f in short["functions"]
                   if f["function"].startswith("[unknown JavaScript")}
        unnamed = sum(reasons.values())
        check(named > 100 and unnamed < 0.5 * named,
              "node %s: a 0.3 s program's JavaScript is named: %d samples in top/mid/leaf, %d unnamed "
              "(%s; the recorder's own settings: %s)" % (major, named, unnamed, reasons,
                                                       short["header"]["sources"].get("node")))


    # Lines: every frame interpreted (--jitless); those that called out
    # have the line of the call; the innermost the line whose bytecode
    # handler runs (r9, proved by r12), or its call's when it called a
    # builtin (V8 writes the slot before any call). --cpu-prof in the same
    # run gives each function's self ticks by line.
    prof_dir = os.path.join(d, "jitless-prof-%s" % major)
    rep = report(record_fixture(major, node, "shares",
                                ["--jitless", "--cpu-prof", "--cpu-prof-dir", prof_dir], "0.1"),
                 "--look", "js", "--granularity", "line", "--min-percent", "0")
    lines, own = {}, {}  # function: {line: total, self samples}; 0: no line
    for f in rep["functions"]:
        m = re.match(r"(\w+)(?: workload\.js:(\d+))?$", f["function"])
        if m and m.group(1) in FNS:
            lines.setdefault(m.group(1), {})[int(m.group(2) or 0)] = f["total"]["samples"]
            own.setdefault(m.group(1), Counter())[int(m.group(2) or 0)] = f["self"]["samples"]
    ticks = {}  # function: {line: --cpu-prof's self ticks}
    profiles = glob.glob(os.path.join(prof_dir, "*.cpuprofile"))
    check(len(profiles) == 1, "node %s --jitless --cpu-prof wrote its profile (%s)" % (major, profiles))
    with open(profiles[0]) as f:
        for n in json.load(f)["nodes"]:
            if n["callFrame"]["functionName"] in FNS and n["callFrame"]["url"].endswith("workload.js"):
                for t in n.get("positionTicks", []):
                    ticks.setdefault(n["callFrame"]["functionName"], Counter())[t["line"]] += t["ticks"]
    body = lambda fn: range(DEFS[fn], min(l for l in DEFS.values() if l > DEFS[fn]))
    hottest = lambda c: max((kv for kv in c.items() if kv[0] != 0), key=lambda kv: kv[1], default=(0, 0))[0]
    check(all(max(lines.get(fn, {0: 1}).items(), key=lambda kv: kv[1])[0] == CALL_LINE[fn]
              for fn in ("top", "mid")) and
          all(l == 0 or l in body(fn) for fn in FNS for l in lines.get(fn, {})),
          "node %s --jitless: top and mid mostly at lines %d and %d (their calls), all lines in "
          "their functions' bodies: %s" % (major, CALL_LINE["top"], CALL_LINE["mid"], lines))
    # --cpu-prof also gives a caller self ticks at its call's line, taken
    # between the call and the callee's frame: top's came out near even
    # with its loop's (124 and 119 ticks on Node 24), and in a CI run at
    # twice its loop's (199 and 104: top then had 20% of the self ticks,
    # where the fixture splits 10% and ours had 9.6%). Those ticks are left
    # out: ours' hottest line is --cpu-prof's hottest of the rest.
    own_work = lambda fn: Counter({l: n for l, n in ticks.get(fn, {}).items() if l != CALL_LINE.get(fn)})
    check(all(own.get(fn) and own[fn][0] <= 0.1 * sum(own[fn].values()) and
              hottest(own[fn]) == hottest(own_work(fn)) != 0
              for fn in FNS),
          "node %s --jitless: each function's innermost samples at most 10%% without a line, "
          "their hottest line --cpu-prof's hottest but the call's: ours %s, --cpu-prof's %s" %
          (major, {fn: dict(own.get(fn, {})) for fn in FNS}, {fn: dict(ticks.get(fn, {})) for fn in FNS}))

    # Baseline frames (Sparkplug code for every function, nothing optimized):
    # lines from the bytecode their code runs at each address. Where the
    # sample is in a builtin the baseline code called without a frame (an
    # inline cache, an operator: 70% of leaf()'s own samples), frame
    # pointers go from the builtin to the baseline code's caller; its
    # address is the return address on top of the stack (before it was
    # read, 14 to 29% of each function's own samples had a line; now 94 to
    # 99%, 80% at least).
    compiled_lines(major, "baseline", record_fixture(
        major, node, "shares", ["--always-sparkplug", "--max-opt=1"], "%g" % (0.08 * LAG_FACTOR)),
        "frames_with_line_from_baseline_code", lined=0.8)

    # Functions TurboFan inlined are frames of their own: once() (twice in
    # twice's body) under twice() under spin(), all three in spin's code,
    # each at a line of its own body. The share of spin's samples whose
    # innermost line is in each body is --cpu-prof's in the same run within
    # 20 points: its ticks by line (Node 20's --cpu-prof gives the inlined
    # functions' lines to spin itself, later ones frames of their own).
    prof_dir = os.path.join(d, "inlined-prof-%s" % major)
    cap = record_fixture(major, node, "inlined", ["--cpu-prof", "--cpu-prof-dir", prof_dir],
                         "%g" % (0.3 * LAG_FACTOR))
    INL = ("spin", "twice", "once")
    paths = tree_paths(report(cap, "--tree", "--min-percent", "0", "--look", "js"))
    on = lambda fn: sum(v for p, v in paths.items() if p[-1] == fn and fn not in p[:-1])
    chained = sum(v for p, v in paths.items() if p[-3:] == ("spin", "twice", "once"))
    rep = report(cap, "--look", "js", "--granularity", "line", "--min-percent", "0")
    # A sample whose code was read after V8 freed it (the recorder behind
    # the program on a loaded machine: a CI run had all 820 of a 1 s run's
    # so) has no line and no inlined frames: left out, at most a third.
    ours, placed, unread = Counter(), Counter(), 0
    for f in rep["functions"]:
        m = re.match(r"(\w+)(?: workload\.js:(\d+))?$", f["function"])
        if m and m.group(1) in INL:
            line = int(m.group(2) or 0)
            if line == 0:
                unread += f["self"]["samples"]
                continue
            ours[m.group(1)] += f["self"]["samples"]
            placed[m.group(1), line in body(m.group(1))] += f["total"]["samples"]
    written = glob.glob(os.path.join(prof_dir, "*.cpuprofile"))
    check(len(written) == 1, "node %s: --cpu-prof wrote the inlined run's profile" % major)
    theirs = Counter()
    for n in json.load(open(written[0]))["nodes"]:
        if n["callFrame"]["functionName"] in INL:
            for t in n.get("positionTicks", []):
                theirs.update({fn: t["ticks"] for fn in INL if t["line"] in body(fn)})
    share = lambda c: {fn: c[fn] / max(1, sum(c.values())) for fn in INL}
    values = rep["header"]["sources"]["node"]["values"]
    # The shares against --cpu-prof's in the build that measures, not under
    # the sanitizers: there the recorder, three times slower beside the
    # fuzzers, had once() at 0.640 and 0.663 where --cpu-prof had 0.768 and
    # 0.800 (two CI runs of 2026-12-06, Node 26.12.1; the same runs' build/
    # 0.671 and 0.767, and 0.738/0.739, 0.725/0.759 alone at its lag; a
    # third run's build/ 0.705 against 0.805 on Node 24). Ours run below
    # --cpu-prof's by 0 to 10 points from run to run, not explained yet, and
    # once by 15.2 (0.605 to 0.757, Node 24, alone on an idle machine,
    # 2026-12-07): 20 points hold that and still fail an inlined body given
    # to its caller (once() at 0 where --cpu-prof has some 0.8).
    close = SANITIZED or all(abs(share(ours)[fn] - share(theirs)[fn]) <= 0.20 for fn in INL)
    check(sum(ours.values()) > 300 and unread <= 0.5 * sum(ours.values()) and
          chained >= 0.95 * on("once") > 0.2 * on("spin") and close and
          values["inlined_frames"] > 300 and
          all(placed[fn, True] >= 0.95 * (placed[fn, True] + placed[fn, False]) > 0 for fn in INL),
          "node %s: inlined twice() and once() are frames of their own: innermost in spin, twice "
          "and once %s of %d samples, --cpu-prof's lines %s of %d; once under twice under spin "
          "in %d of %d; at lines of their own bodies: %s (%d inlined frames, %d with a line, %d "
          "left out; %d samples without a line, code not found at %d pcs)" %
          (major, r3(share(ours)), sum(ours.values()), r3(share(theirs)), sum(theirs.values()),
           chained, on("once"), dict(placed), values["inlined_frames"],
           values["inlined_frames_with_line"], values["inlined_functions_not_named"], unread,
           values["code_not_found"]))

    # Recursion keeps its depth (on the main thread), and a worker thread
    # walks its own isolate, numbered apart from the main thread's (the
    # v8.isolate label, from V8's thread-local isolate): one run.
    cap = record_fixture(major, node, "worker")
    rep = report(cap, "--tree", "--min-percent", "0", "--look", "js")
    deepest = max((p.count("recurse") for p in tree_paths(rep) if p[-1] == "leaf"), default=0)
    check(deepest == 41, "node %s: recursion 41 frames deep under leaf (found %d)" % (major, deepest))
    rep = report(cap, "--threads", "--tree", "--min-percent", "0")
    worker = sum(v for p, v in tree_paths(rep).items() if p[-2:] == ("workerLoop", "leaf"))
    check(worker > 100, "node %s: the worker's workerLoop -> leaf (%d samples)" % (major, worker))
    main_tid = rep["header"]["target_pid"]
    isolates = {t["tid"]: t.get("isolate") for t in rep["threads"] if t["samples"] > 100}
    check(isolates.get(main_tid) == "1" and sorted(isolates.values(), key=str) == ["1", "2"],
          "node %s: the main thread runs isolate 1, the worker's thread isolate 2: %s" %
          (major, isolates))
    # The worker's name option, in full (the system's name is cut to 15
    # bytes), from Node 24 on, which gives it to uv_thread_setname; Node 20
    # and 22 keep it in their own objects only: the system's name stays.
    names = {t["tid"]: t.get("name") for t in rep["threads"] if t["samples"] > 100}
    worker_tid = [tid for tid, isolate in isolates.items() if isolate == "2"]
    want = "fixture worker thread" if int(major) >= 24 else "node"
    check(len(worker_tid) == 1 and names.get(worker_tid[0]) == want,
          "node %s: the worker's thread is named %r: %s (%d threads named by Node)" %
          (major, want, names, rep["header"]["sources"]["node"]["values"]["threads_named"]))
    if PPROF:
        pb = os.path.join(d, "worker.pb.gz")
        run([MICROSCOPE, "convert", cap, "--to", "pprof", "-o", pb])
        tags = run([PPROF, "-tags", pb]).stdout
        check(re.search(r"v8\.isolate: Total", tags) and re.search(r"\): 2\n", tags),
              "node %s: pprof -tags lists the v8.isolate label: %s" % (major, tags[-200:]))

    if major in EVERY:
        # -g dwarf: V8's generated code has no CFI; it keeps frame pointers and
        # is unwound by them, so stacks still reach _start through it.
        cap = record_fixture(major, node, "shares", scale="%g" % (0.5 * LAG_FACTOR),
                             record_args=["-g", "dwarf"])
        rep = report(cap, "--tree", "--min-percent", "0")
        ends = rep["header"]["stack_ends"]
        rooted = sum(v for p, v in tree_paths(rep).items() if p[-1] == "leaf" and p[0] == "_start")
        paths = tree_paths(report(cap, "--tree", "--min-percent", "0", "--look", "js"))
        in_leaf = sum(v for p, v in paths.items() if p[-1] == "leaf")
        chain = sum(v for p, v in paths.items() if p[-3:] == ("top", "mid", "leaf"))
        check(ends["complete"] > 0.9 * rep["header"]["samples"] and rooted > 0.9 * in_leaf and
              chain > 0.9 * in_leaf,
              "node %s -g dwarf: %d of %d stacks complete; leaf from _start in %d of %d, under mid "
              "under top in %d (stack ends %s)" %
              (major, ends["complete"], rep["header"]["samples"], rooted, in_leaf, chain,
               {k: v for k, v in ends.items() if v}))

        # A native addon's C calls JavaScript back: the callback's frames sit
        # under the addon's C function, under the JavaScript that called it.
        paths = tree_paths(report(record_fixture(major, node, "addon", args=[fixture("addon.node")]),
                                  "--tree", "--min-percent", "0"))
        in_leaf = sum(v for p, v in paths.items() if p[-1] == "leaf")
        through = sum(v for p, v in paths.items() if p[-1] == "leaf" and "CallThrough" in p and
                      "main" in p and p.index("main") < p.index("CallThrough"))
        check(in_leaf > 100 and through > 0.95 * in_leaf,
              "node %s: leaf called back from the addon's C (CallThrough), under main: %d of %d" %
              (major, through, in_leaf))

        # A program naming a thread without end (the addon names the main
        # thread 6,000 times through uv_thread_setname) is given up to 4,096
        # names, the rest counted as refused, or as lost where the ring was
        # full; Node 20 has no such function (Node 22 has, the addon calls it).
        cap = record_fixture(major, node, "rename", scale="0.3", args=[fixture("addon.node")])
        rep = report(cap, "--threads")
        values = rep["header"]["sources"]["node"]["values"]
        given, refused, lost = (values["thread_names_given"], values["thread_names_refused"],
                                values["thread_names_lost"])
        main = [t.get("name") for t in rep["threads"] if t["tid"] == rep["header"]["target_pid"]]
        if int(major) >= 22:  # libuv 1.50 on: Node 22 has uv_thread_setname (its workers never call it)
            # (A sanitized recorder, seconds behind, may find most names lost
            # from the full ring, and the bound never reached.)
            check(main and re.match(r"rename \d+$", main[0] or "") and given <= 4096 and
                  given + refused + lost >= 6000 and (refused > 0 or SANITIZED),
                  "node %s: the renamed main thread is given names up to the bound: named %s, "
                  "%d names given, %d refused, %d lost" % (major, main, given, refused, lost))
        else:
            check(main == ["node"] and given == 0,
                  "node %s: no name heard where Node has no uv_thread_setname: %s" % (major, main))

        # The pool threads run no JavaScript: no JavaScript frame, no marker.
        cap = record_fixture(major, node, "pbkdf2")
        folded = os.path.join(d, "pbkdf2.folded")
        p = run([MICROSCOPE, "convert", cap, "--to", "folded", "--per-thread", "-o", folded])
        check(p.returncode == 0, "convert --per-thread: %s" % p.stderr[-300:])
        main_tid = str(report(cap)["header"]["target_pid"])
        pool, marked = 0, []
        for line in open(folded):
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            frames = stack.split(";")
            if frames[0].rsplit("-", 1)[-1] == main_tid or not any("pbkdf2" in f.lower() for f in frames):
                continue
            pool += int(count)
            if any(f.startswith("[unknown JavaScript") or f in FNS or f == "(anonymous)" for f in frames):
                marked.append(frames[-3:])
        check(pool > 50 and not marked,
              "node %s: %d samples of pool threads hash, none with JavaScript frames or markers (%s)" %
              (major, pool, marked[:2]))
        labeled = [t["tid"] for t in report(cap, "--threads")["threads"]
                   if t.get("isolate") and t["tid"] != int(main_tid)]
        check(not labeled, "node %s: no pool thread is labeled with an isolate (%s)" % (major, labeled))
