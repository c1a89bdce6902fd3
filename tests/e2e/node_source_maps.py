"""Source maps: a script minified by terser (npm's, fetched by
scripts/fetch-npm-programs) with its names mangled shows as the program's
own source (tests/fixtures/node/mapped.js). On Node 20 and 26, run
--jitless (every frame interpreted, so every frame has a line), with the
map in a file beside the script and inline (a data: URL), each frame of
the fixture's three functions has its own name again, the source's path
and a line in its body, and the innermost's samples are on its loop's
lines (its header and its statement); on Node 26 the file map is read again with the program run as
another user, through directories and a file anyone can read. A real
library's maps (npm's rxjs: dist/cjs/*.js.map, each
naming its src/*.ts) place its frames in its TypeScript sources, with
lines. A map the target's user could not read (root's, mode 0600,
named by a script run as another user, or by a script that root starts
and that drops to another user, whose /proc directory stays root's) is
not read: the recording says why, and nothing of the map reaches it."""
import re
import shutil
from collections import Counter

from common import *

require_perf()
nodes = fetch_nodes()
npm = fetch_npm_programs()
FIXTURE = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                                        "node", "mapped.js"))
d = tmpdir()
os.chmod(d, 0o755)  # the maps are read when anyone could read them
src, dist = os.path.join(d, "src"), os.path.join(d, "dist")
os.makedirs(src)
os.makedirs(dist)
source = os.path.join(src, "mapped.js")
shutil.copy(FIXTURE, source)
with open(source) as f:
    LINES = f.read().split("\n")
FNS = ("hotLeaf", "middleLayer", "outerDriver")
DEFS = {m.group(1): i + 1 for i, l in enumerate(LINES) for m in [re.match(r"function (\w+)\(", l)] if m}
HOT = 1 + next(i for i, l in enumerate(LINES) if "Math.imul" in l)
# hotLeaf's loop: its header (the increment, the test) and its statement,
# whose bytecodes share its samples differently from run to run (Node 20
# 10:1437 9:349; Node 26 in a CI run 9:1041 10:903, where others had the
# statement's the hotter).
LOOP = (HOT - 1, HOT)


def body(fn):
    return range(DEFS[fn], min([l for l in DEFS.values() if l > DEFS[fn]] + [len(LINES)]))


def minify(out, url):
    """terser -c -m toplevel on the fixture into dist/OUT with its map."""
    p = run(["/usr/bin/node", os.path.join(npm, "terser", "bin", "terser"), "../src/mapped.js", "-c", "-m",
             "toplevel", "--source-map", url, "-o", out], cwd=dist)
    check(p.returncode == 0, "terser minified the fixture into %s (%s)" % (out, p.stderr[-300:]))
    with open(os.path.join(dist, out)) as f:
        text = f.read()
    check(not any(re.search(r"function %s\(" % fn, text) for fn in FNS),
          "%s: its functions renamed by terser" % out)
    return os.path.join(dist, out)


def record_script(script, node, tag, prefix=()):
    cap = os.path.join(d, tag + ".mscap")
    p = run([MICROSCOPE, "record", "-q", "--node", "bpf", "-o", cap, "--", *prefix, node, "--jitless", script,
             "30"], timeout=300)
    check(p.returncode == 0 and "mapped done" in p.stdout, "%s: recorded (%s)" % (tag, p.stderr[-500:]))
    return cap


external = minify("ext.js", "url='ext.js.map'")
inline = minify("inl.js", "url=inline")
uid, gid, as_attacker = attacker()
runs = [("20", external, "a file beside it", ()), ("20", inline, "a data: URL", ()),
        ("26", external, "a file beside it, run as another user", as_attacker),
        ("26", inline, "a data: URL", ())]
for major, script, how, prefix in runs:
    node = nodes.get(major)
    if node is None:
        fail("node %s: not fetched (scripts/fetch-node)" % major)
    tag = "%s-%s-%d" % (major, os.path.basename(script), len(prefix))
    rep = report(record_script(script, node, tag, prefix), "--look", "js", "--granularity", "line",
                 "--min-percent", "0")
    values = rep["header"]["sources"]["node"]["values"]
    lines, own, other = {}, {}, {}  # function: {line: total, self samples}
    for f in rep["functions"]:
        m = re.match(r"(\w+)(?: \S+:(\d+))?$", f["function"])
        if not m or f["module"] == "" or "node:" in f["module"]:
            continue
        if m.group(1) in FNS and f["module"] == source:
            lines.setdefault(m.group(1), {})[int(m.group(2) or 0)] = f["total"]["samples"]
            own.setdefault(m.group(1), {})[int(m.group(2) or 0)] = f["self"]["samples"]
        elif f["module"].startswith(d):
            other[f["function"]] = (f["module"], f["total"]["samples"])
    check(values["source_maps_read"] >= 1 and set(lines) == set(FNS) and not other,
          "node %s, map in %s: the fixture's functions by their own names in %s (%s), none "
          "left minified (%s); %d maps read" % (major, how, source, sorted(lines), other,
                                               values["source_maps_read"]))
    leaf = own.get("hotLeaf", {})
    check(all(l in body(fn) for fn in FNS for l in lines.get(fn, {}) if l != 0) and
          leaf.get(0, 0) <= 0.1 * sum(leaf.values()) and
          sum(leaf.get(l, 0) for l in LOOP) >= 0.9 * (sum(leaf.values()) - leaf.get(0, 0)) > 0,
          "node %s, map in %s: every line in its function's body, hotLeaf's on its loop's "
          "(%s: 90%% at least), at most 10%% of its samples without a line: %s" %
          (major, how, LOOP, lines))

# A real library: rxjs's operators over a range, 40 rounds, run --jitless
# (so every frame has a line).
driver = os.path.join(d, "rx.js")
with open(driver, "w") as f:
    f.write("""const { range } = require(%r);
const { map, filter, scan } = require(%r);
let last = 0;
for (let round = 0; round < 40; round++) {
  range(0, 20000).pipe(map((x) => x * 3), filter((x) => x %% 2 === 0), scan((a, x) => a + x, 0))
    .subscribe((v) => { last = v; });
}
console.log('mapped done', last);
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
""" % (os.path.join(npm, "rxjs"), os.path.join(npm, "rxjs", "operators")))
rxjs_src = os.path.realpath(os.path.join(npm, "rxjs", "src")) + "/"
rep = report(record_script(driver, nodes["26"], "rxjs"), "--look", "js", "--granularity", "line",
             "--min-percent", "0")
values = rep["header"]["sources"]["node"]["values"]
ts = Counter()  # rxjs's .ts sources: (with a line, without) samples
dist_js = 0  # its functions left in dist/: a module's own body (tsc maps none of the
# prologue where V8 starts the module's function) is, at its load
for f in rep["functions"]:
    if f["module"].startswith(rxjs_src) and f["module"].endswith(".ts"):
        ts[(f["module"], re.search(r":\d+$", f["function"]) is not None)] += f["total"]["samples"]
    elif "/rxjs/dist/" in f["module"] and not f["function"].startswith("(anonymous)"):
        dist_js += f["total"]["samples"]
files = {m for m, _ in ts}
with_line = sum(v for (m, line), v in ts.items() if line)
check(values["source_maps_read"] >= 5 and len(files) >= 5 and dist_js <= 0.01 * sum(ts.values()) and
      with_line >= 0.9 * sum(ts.values()),
      "rxjs: its frames in %d of its TypeScript sources (%s), %d of %d samples' frames with a line, "
      "at most 1%% left in dist/ besides modules' bodies (%d); %d maps read" %
      (len(files), sorted(os.path.basename(m) for m in files)[:8], with_line, sum(ts.values()), dist_js,
       values["source_maps_read"]))

# A map the target's user could not read: root's, mode 0600, named by a
# script (readable by all) run as another user, and by one root starts
# that drops to another user first (not dumpable then: its /proc
# directory is root's, its filesystem uid the other user's).
secret = os.path.join(d, "secret")
os.makedirs(secret)
shutil.copy(external + ".map", os.path.join(secret, "private.js.map"))
with open(os.path.join(secret, "private.js.map")) as f:
    private = f.read().replace("../src/mapped.js", "CANARY-private-source.js")
with open(os.path.join(secret, "private.js.map"), "w") as f:
    f.write(private)
os.chmod(os.path.join(secret, "private.js.map"), 0o600)
with open(external) as f:
    text = f.read().replace("//# sourceMappingURL=ext.js.map", "//# sourceMappingURL=../secret/private.js.map")
hostile = os.path.join(dist, "hostile.js")
with open(hostile, "w") as f:
    f.write(text)
dropping = os.path.join(dist, "dropping.js")
with open(dropping, "w") as f:
    f.write("process.setgid(%d); process.setuid(%d);\n" % (gid, uid) + text)
for script, prefix, who in ((hostile, as_attacker, "another user's script"),
                            (dropping, (), "a script root started that dropped to another user")):
    cap = record_script(script, nodes["26"], os.path.basename(script), prefix)
    h = report(cap)["header"]
    problems = [p for p in h["problems"] if p["kind"] == "JavaScript source maps not read"]
    check(problems and "private.js.map" in problems[0]["example"] and
          "neither readable by anyone" in problems[0]["example"] and
          h["sources"]["node"]["values"]["source_maps_read"] == 0,
          "a map of root's named by %s is not read, saying why: %s" % (who, problems))
    p = run([MICROSCOPE, "report", cap, "--look", "js", "--min-percent", "0"])
    check(p.returncode == 0 and "CANARY" not in p.stdout and "hotLeaf" not in p.stdout,
          "%s: nothing of the map reaches the recording (its functions stay minified)" % who)
