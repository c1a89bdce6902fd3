"""The CPython releases this Debian does not ship (3.13, 3.14, 3.15), as
scripts/fetch-python gets them from Debian's newer suites into a cache
outside the repository: each runs, is the version asked for, carries
CPython's debug offsets (cookie "xdebugpy", then its hex version) at the
start of its .PyRuntime section in the file itself (Debian's own 3.11 has
none: its layout is a table), where the Python walker
reads its layout, and records here with whole native stacks (the binaries
are pointed at their own suite's loader and glibc).

The layout read from each file (src/runtimes/python/layout, with the shape
of _Py_DebugOffsets from CPython's headers) is checked against the running
interpreter itself, through ctypes: its own thread state's native thread
id, the interpreter's thread list, the running frame's code object, and
that code's qualified name and first line. Code objects are read out of a
running interpreter (process_vm_readv), each object proved by its type,
with names of every string kind (Latin-1, UCS-2, UCS-4), and each thread's
name as threading gives it (3.11's too). The line-table reader gives
every instruction of every code object of a few standard modules the line
CPython's own co_lines() gives it."""
import json
import re
import struct
import subprocess

from common import *

require_perf()
pythons = fetch_pythons()
script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "fetch-python")
check(sorted(pythons) == ["3.13", "3.14", "3.15"], "three interpreters: %s" % pythons)
again = run([script, "3.13"])
check(again.returncode == 0 and "fetching" not in again.stderr, "a cached version is not fetched again")
# Debian's own 3.11 (scripts/setup's python3): no debug offsets, the table.
pythons["3.11"] = "/usr/bin/python3.11"
check(os.path.exists(pythons["3.11"]), "Debian's python3.11 is installed")
d = tmpdir()

PROBE = r"""
import ctypes, sys, threading
L = dict((k, int(v)) for k, v in (line.split() for line in sys.argv[1].splitlines()[1:]))
P = ctypes.c_void_p
def probe():
    get = ctypes.pythonapi.PyThreadState_Get
    get.restype = P
    t = get()
    interp_get = ctypes.pythonapi.PyInterpreterState_Get
    interp_get.restype = P
    interp = interp_get()
    if "thread_cframe" in L:  # 3.11: the current frame is behind the thread's _PyCFrame
        cframe = P.from_address(t + L["thread_cframe"]).value
        frame = P.from_address(cframe + L["cframe_current_frame"]).value
    else:
        frame = P.from_address(t + L["thread_current_frame"]).value
    exe = P.from_address(frame + L["frame_executable"]).value & ~3  # 3.14+: a tagged stack ref
    return {
        "native_thread_id": ctypes.c_ulong.from_address(t + L["thread_native_id"]).value ==
                            threading.get_native_id(),
        "threads_head": P.from_address(interp + L["interp_threads_head"]).value == t,
        "frame_executable": exe == id(probe.__code__),
        "code_qualname": P.from_address(exe + L["code_qualname"]).value == id(probe.__code__.co_qualname),
        "code_firstlineno": ctypes.c_int.from_address(exe + L["code_firstlineno"]).value ==
                            probe.__code__.co_firstlineno,
    }
r = probe()
print(" ".join("%s=%s" % kv for kv in sorted(r.items())))
sys.exit(0 if all(r.values()) else 1)
"""
# Every code object of a few standard modules, with CPython's own line for
# each range of instructions (co_lines), for the line-table reader.
DUMP = r"""
import importlib, types
def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
for name in ("json.decoder", "argparse", "threading", "dataclasses", "inspect", "email.message", "ast"):
    path = importlib.import_module(name).__file__
    for co in walk(compile(open(path, encoding="utf-8").read(), path, "exec")):
        print(co.co_firstlineno, co.co_linetable.hex() or "00", ";".join(
            "%d,%d,%s" % (s, e, "-" if l is None else l) for s, e, l in co.co_lines()))
"""
# A target for the code-object reader: prints where its code objects are
# and what they hold, then waits to be read.
TARGET = """import json, sys, threading, time
def alpha_fn(x):
    return x + 1
class Klass:
    def method(self):
        return 2
# Names of each string kind: Latin-1, UCS-2 and UCS-4 code points.
wide = [alpha_fn.__code__.replace(co_qualname=q) for q in ("\\u00f1ame", "\\u0394elta.\\u6f22", "\\U0001f40d.snake")]
codes = [alpha_fn.__code__, Klass.method.__code__] + wide
ready = threading.Barrier(4)
def idle():
    ready.wait()
    time.sleep(60)
def renamed():
    threading.current_thread().name = "renamed in run"
    idle()
threading.Thread(target=idle, daemon=True, name="idle \u00f1").start()
threading.Thread(target=idle, daemon=True).start()
threading.Thread(target=renamed, daemon=True, name="before").start()
ready.wait()
tids = sorted(t.native_id for t in threading.enumerate())
names = {str(t.native_id): t.name for t in threading.enumerate()}
print(json.dumps({"addresses": [id(c) for c in codes] + [id("not code")], "tids": tids, "names": names,
                  "expected": [[c.co_qualname, c.co_filename, c.co_firstlineno, len(c.co_linetable)]
                               for c in codes]}, ensure_ascii=True), flush=True)
time.sleep(60)
"""
FIB = "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\nprint(fib(33))\n"
for version, python in sorted(pythons.items()):
    out = run([python, "-c", "import sys, threading, ctypes, json; print('%d.%d' % sys.version_info[:2])"])
    check(out.returncode == 0 and out.stdout.strip() == version,
          "%s runs with threading, ctypes and json (%r)" % (version, out.stdout + out.stderr[-300:]))
    if version == "3.11":
        with open(python, "rb") as f:
            check(b"xdebugpy" not in f.read(), "3.11 publishes no debug offsets: its layout is a table")
    sections = run(["readelf", "-SW", python]).stdout
    m = re.search(r"\.PyRuntime\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
    check(m is not None, "%s has a .PyRuntime section" % version)
    with open(python, "rb") as f:
        f.seek(int(m.group(2), 16))
        cookie, hexversion = struct.unpack("<8sQ", f.read(16))
    major, minor = (int(x) for x in version.split("."))
    if version != "3.11":
        check(cookie == b"xdebugpy" and hexversion >> 16 == (major << 8 | minor),
              "%s: debug offsets in the file (cookie %r, version 0x%08x)" % (version, cookie, hexversion))
    layout = run([os.environ["PYTHON_LAYOUT"], python])
    check(layout.returncode == 0 and layout.stdout.startswith("version " + version + "."),
          "%s: layout read from the file (%s)" % (version, (layout.stdout + layout.stderr).split("\n")[0]))
    live = run([python, "-c", PROBE, layout.stdout])
    check(live.returncode == 0, "%s: the layout matches the running interpreter: %s" %
          (version, (live.stdout + live.stderr).strip()[-400:]))
    dump = run([python, "-c", DUMP])
    lines = run([os.environ["PYTHON_LINES"]], input=dump.stdout)
    m = re.match(r"(\d+) code objects, (\d+) code units, (\d+) mismatches", lines.stdout)
    check(dump.returncode == 0 and lines.returncode == 0 and m and int(m.group(2)) > 50000,
          "%s: co_linetable read as CPython reads it: %s" % (version, (lines.stdout + lines.stderr).strip()))
    target_py = os.path.join(d, "target%s.py" % version)
    with open(target_py, "w", encoding="utf-8") as f:
        f.write(TARGET)
    target = subprocess.Popen([python, target_py], stdout=subprocess.PIPE, text=True)
    try:
        told = json.loads(target.stdout.readline())
        got = run([os.environ["PYTHON_CODE"], str(target.pid), python] +
                  [str(a) for a in told["addresses"]]).stdout.splitlines()
    finally:
        target.kill()
        target.wait()
    check(sorted(got[0].split()[1:]) == sorted(str(t) for t in told["tids"]),
          "%s: the interpreter's thread list read live: %s (threading: %s)" % (version, got[0], told["tids"]))
    # Thread names as threading gives them (3.11, 3.13 on): the main
    # thread's, a default one (Thread-N (target)), a non-ASCII one, and one
    # its thread renamed as it ran.
    read = dict(x.split("=", 1) for x in got[1].split("\t")[1:])
    check(got[1].startswith("names") and read == told["names"],
          "%s: threading's names read live: %s (threading: %s)" % (version, read, told["names"]))
    got = got[2:]
    want = ["%s|%s|%d|%d" % tuple(e) for e in told["expected"]]
    check(got[:5] == want, "%s: code objects read from the live process, names of every string kind: "
          "%s (want %s)" % (version, got[:5], want))
    check(len(got) == 6 and "has type" in got[5],
          "%s: a str at a code address is refused: %s" % (version, got[5:]))
    cap = os.path.join(d, "fib%s.mscap" % version)
    record(cap, [python, "-c", FIB])
    rep = report(cap)
    h = rep["header"]
    names = {f["function"] for f in rep["functions"] if f["module"] == "python" + version}
    check(h["samples"] > 50 and h["stack_ends"]["complete"] >= 0.9 * h["samples"],
          "%s: %d samples, %d with whole stacks" % (version, h["samples"], h["stack_ends"]["complete"]))
    # The script runs under PyEval_EvalCode (exported in every version;
    # 3.14's evaluation loop is split into tail-called functions); start-up
    # and exit are the rest.
    check("PyEval_EvalCode" in names and
          rep["functions"] and any(f["function"] == "PyEval_EvalCode" and
                                   f["total"]["samples"] >= 0.8 * h["samples"] for f in rep["functions"]),
          "%s: the interpreter's frames are named, PyEval_EvalCode under 80%% of samples" % version)
