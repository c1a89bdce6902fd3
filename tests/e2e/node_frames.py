"""JavaScript frames walked by BPF at each sample and spliced into the
native stacks (record --node bpf), on Debian's Node 20 and on Node 22, 24
and 26 from the npm registry (scripts/fetch-node).

The fixture (tests/fixtures/node/workload.js) does a fixed amount of work:
top()/mid()/leaf() 10/30/60 of it in their own loops; recursion 40 calls
deep; a worker thread; crypto.pbkdf2 on the libuv pool. Each function's
share of the JavaScript samples must be within 5 points of node
--cpu-prof's for the same fixture; the JavaScript frames sit, callee
first, where node's JS entry runs them; recursion keeps its depth; the
worker's thread has its own JavaScript frames; the pool threads, which run
no JavaScript, carry no JavaScript frame and no unknown marker; and nearly
every JavaScript frame is named."""
import glob
import json
from collections import Counter

from common import *

require_perf()
nodes = {"20": "/usr/bin/node"}
nodes.update((k, v) for k, v in fetch_runtimes("fetch-node", ["22", "24", "26"]).items())
check(os.path.exists(nodes["20"]), "Debian's node 20 is installed")
WORKLOAD = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "fixtures", "node", "workload.js"))
d = tmpdir()
FNS = ["top", "mid", "leaf"]
SCALE = "1"


def record_fixture(major, node, mode):
    cap = os.path.join(d, "%s-%s.mscap" % (major, mode))
    p = run([MICROSCOPE, "record", "-q", "--node", "bpf", "-o", cap, "--", node, WORKLOAD, mode,
             SCALE], timeout=300)
    if p.returncode != 0:
        fail("node %s %s: record exited %d: %s" % (major, mode, p.returncode, p.stderr[-2000:]))
    return cap


def js_self_shares(cap):
    """Each fixture function's share of the samples whose innermost
    JavaScript frame is one of them (the js look's self)."""
    f = functions(report(cap, "--look", "js", "--min-percent", "0"))
    counts = {fn: sum(s for name, (s, t) in f.items() if name == fn) for fn in FNS}
    total = sum(counts.values())
    return {fn: counts[fn] / max(1, total) for fn in FNS}, total


def cpu_prof_shares(node, mode):
    out = os.path.join(d, "cpuprof")
    shutil.rmtree(out, True)
    p = run([node, "--cpu-prof", "--cpu-prof-dir", out, WORKLOAD, mode, SCALE], timeout=300)
    check(p.returncode == 0, "node --cpu-prof runs the fixture: %s" % p.stderr[-300:])
    prof = json.load(open(glob.glob(os.path.join(out, "*.cpuprofile"))[0]))
    name = {n["id"]: n["callFrame"]["functionName"] for n in prof["nodes"]}
    counts = Counter(name[s] for s in prof["samples"])
    total = sum(counts[fn] for fn in FNS)
    return {fn: counts[fn] / max(1, total) for fn in FNS}


def unknown_share(rep):
    unknown = sum(f["total"]["samples"] for f in rep["functions"]
                  if f["function"].startswith("[unknown JavaScript"))
    js = sum(f["total"]["samples"] for f in rep["functions"] if f["function"] == "top")
    return unknown / max(1, js)


for major, node in sorted(nodes.items()):
    # Shares against --cpu-prof, and where the frames sit.
    cap = record_fixture(major, node, "shares")
    ours, n = js_self_shares(cap)
    theirs = cpu_prof_shares(node, "shares")
    check(n > 300 and all(abs(ours[fn] - theirs[fn]) <= 0.05 for fn in FNS),
          "node %s: self shares %s within 5 points of --cpu-prof's %s (%d samples)" %
          (major, {k: round(v, 3) for k, v in ours.items()},
           {k: round(v, 3) for k, v in theirs.items()}, n))
    rep = report(cap, "--tree", "--min-percent", "0")
    paths = tree_paths(rep)
    chain = sum(v for p, v in paths.items() if p[-3:] == ("top", "mid", "leaf"))
    entered = sum(v for p, v in paths.items() if p[-1] == "leaf" and "Builtins_JSEntry" in p and
                  p.index("Builtins_JSEntry") < p.index("top"))
    check(chain > 0.4 * n and entered > 0.9 * chain,
          "node %s: leaf runs under mid under top (%d samples), called through node's JS entry "
          "(%d)" % (major, chain, entered))
    check(unknown_share(rep) < 0.02, "node %s: unknown JavaScript frames in %.1f%% of top's samples" %
          (major, 100 * unknown_share(rep)))
    src = [s for s in rep["header"].get("sources", []) if s.get("name") == "node"] \
        if isinstance(rep["header"].get("sources"), list) else []

    # Recursion keeps its depth.
    rep = report(record_fixture(major, node, "recursion"), "--tree", "--min-percent", "0",
                 "--look", "js")
    deepest = max((p.count("recurse") for p in tree_paths(rep) if p[-1] == "leaf"), default=0)
    check(deepest == 41, "node %s: recursion 41 frames deep under leaf (found %d)" % (major, deepest))

    # A worker thread walks its own isolate.
    rep = report(record_fixture(major, node, "worker"), "--threads", "--tree", "--min-percent", "0")
    worker = sum(v for p, v in tree_paths(rep).items() if p[-2:] == ("workerLoop", "leaf"))
    check(worker > 100, "node %s: the worker's workerLoop -> leaf (%d samples)" % (major, worker))

    # The pool threads run no JavaScript: no JavaScript frame, no marker.
    cap = record_fixture(major, node, "pbkdf2")
    rep = report(cap, "--tree", "--min-percent", "0")
    pool = sum(v for p, v in tree_paths(rep).items()
               if any("pbkdf2" in fn.lower() or "PBKDF2" in fn for fn in p[-1:]))
    marked = [p for p in tree_paths(rep) if any("pbkdf2" in fn.lower() for fn in p) and
              any(fn.startswith("[unknown JavaScript") or fn in FNS for fn in p)]
    check(pool > 50 and not marked,
          "node %s: %d samples hash on the pool, none with JavaScript frames or markers (%s)" %
          (major, pool, marked[:2]))
