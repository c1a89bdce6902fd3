"""The probes SDK from Python (sdk/python, over libmicroscope.so by ctypes)
and Node.js (sdk/node, a Node-API addon), live on every version this
machine runs: zones counted exactly and as long as the program measured
them, CPU samples of the spinning code inside its zone, marks, counters and
labels, Python's trace_calls; and both packages doing nothing, and the
programs running on, without their native library."""
import re

from common import *

require_perf()
d = tmpdir()
HERE = os.path.dirname(os.path.abspath(__file__))
SDK_PYTHON = os.path.realpath(os.path.join(HERE, "..", "..", "sdk", "python"))
SDK_NODE = os.path.realpath(os.path.join(HERE, "..", "..", "sdk", "node"))
FIXTURES_SRC = os.path.realpath(os.path.join(HERE, "..", "fixtures"))
N = 200


def measured(stdout):
    m = re.search(r"sleep_ns (\d+) spin_ns (\d+) available (\d)", stdout)
    check(m is not None, "the fixture said what it measured: %r" % stdout[-300:])
    return int(m.group(1)), int(m.group(2)), m.group(3) == "1"


def check_rounds(tag, out, stdout):
    slept, spun, available = measured(stdout)
    check(available, "%s: the native library loaded" % tag)
    rep = report(out, "--zones")
    z = {r["zone"]: r for r in rep["zones"]["rows"]}
    for name, own in (("sleep", slept), ("spin", spun)):
        r = z.get(name, {"count": 0, "total_ns": 0})
        check(r["count"] == N, "%s: %s: %d occurrences (want %d)" % (tag, name, r["count"], N))
        # The program's own measure also holds each call into the SDK (a
        # zone's begin and end around the work): up to 100 us each on a
        # loaded machine (Node 20: 224.8 ms in zones, 237.5 measured).
        check(abs(r["total_ns"] - own) <= 0.05 * own + N * 100e3,
              "%s: %s: %.1f ms in zones, the program measured %.1f ms" %
              (tag, name, r["total_ns"] / 1e6, own / 1e6))
    check(0.95e6 <= z["spin"]["p50"]["duration_ns"] <= 1.1e6,
          "%s: spin p50 %d ns (1 ms)" % (tag, z["spin"]["p50"]["duration_ns"]))
    check(z["sleep"]["p50"]["duration_ns"] >= 2.0e6,
          "%s: sleep p50 %d ns (2 ms asleep)" % (tag, z["sleep"]["p50"]["duration_ns"]))
    zs = rep["zones"]
    check(zs["marks"] == N and zs["counter_records"] == N,
          "%s: %d marks and %d counter records (want %d)" % (tag, zs["marks"], zs["counter_records"], N))
    check(zs["label_records"] == 3 * N + 1, "%s: %d label records" % (tag, zs["label_records"]))
    # The samples of the spinning function are in the spinning zone.
    spin_all = functions(report(out)).get("spin", (0, 0))[1]
    spin_in = functions(report(out, "--zone", "spin")).get("spin", (0, 0))[1]
    check(spin_all >= N / 2, "%s: the spin function sampled %d times" % (tag, spin_all))
    check(spin_in >= 0.95 * spin_all, "%s: %d of its %d samples inside zone spin" % (tag, spin_in, spin_all))
    return z


def without_library(tag, command, env):
    env = {k: v for k, v in env.items() if k != "LD_LIBRARY_PATH"}  # the build's libraries
    p = run(command, env=env, timeout=120)
    check(p.returncode == 0, "%s without its native library runs (%d): %s" % (tag, p.returncode, p.stderr[-300:]))
    _, _, available = measured(p.stdout)
    check(not available, "%s says the library is not there" % tag)


# Python: Debian's 3.11, and 3.13-3.15.
pythons = {"3.11": os.path.realpath("/usr/bin/python3.11")}
pythons.update(fetch_pythons())
fixture_py = os.path.join(FIXTURES_SRC, "python", "probes.py")
for version, python in sorted(pythons.items()):
    python = python[0] if isinstance(python, list) else python
    env = dict(os.environ, PYTHONPATH=SDK_PYTHON)
    out = "%s/python%s.mscap" % (d, version)
    p = run([MICROSCOPE, "record", "-q", "--probes", "all", "-o", out, "--", python, fixture_py,
             str(N)], env=env, timeout=300)
    check(p.returncode == 0, "python %s recorded (%d): %s" % (version, p.returncode, p.stderr[-300:]))
    z = check_rounds("python " + version, out, p.stdout)
    root, leaf = z.get("traced_root", {}), z.get("traced_leaf", {})
    check(root.get("count") == 5 and leaf.get("count") == 10,
          "python %s: trace_calls: traced_root %s, traced_leaf %s times" %
          (version, root.get("count"), leaf.get("count")))
    check(root["self_ns"] < root["total_ns"], "python %s: traced_leaf nests in traced_root" % version)
    check(leaf["file"] == fixture_py, "python %s: a traced function's file: %s" % (version, leaf["file"]))
    without_library("python " + version, [python, fixture_py, "3"],
                    dict(os.environ, PYTHONPATH=SDK_PYTHON, MICROSCOPE_LIBRARY="/nonexistent/libmicroscope.so"))

# Node.js: Debian's 20, and 22, 24, 26.
nodes = fetch_nodes()
fixture_js = os.path.join(FIXTURES_SRC, "node", "probes.js")
for version, node in sorted(nodes.items(), key=lambda kv: int(kv[0])):
    node = node[0] if isinstance(node, list) else node
    env = dict(os.environ, MICROSCOPE_SDK_NODE=SDK_NODE)
    out = "%s/node%s.mscap" % (d, version)
    p = run([MICROSCOPE, "record", "-q", "--probes", "all", "-o", out, "--", node, fixture_js, str(N)],
            env=env, timeout=300)
    check(p.returncode == 0, "node %s recorded (%d): %s" % (version, p.returncode, p.stderr[-300:]))
    check_rounds("node " + version, out, p.stdout)
    without_library("node " + version, [node, fixture_js, "3"],
                    dict(os.environ, MICROSCOPE_SDK_NODE=SDK_NODE, MICROSCOPE_NODE_ADDON="/nonexistent.node"))
