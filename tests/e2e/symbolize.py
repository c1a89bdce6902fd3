"""Symbolization on another host, proven by build ID.

Fixtures built -O2 -g are split the way distributions ship them (objcopy
--only-keep-debug, then strip), recorded with --symbolize later, and named
afterwards from a .build-id tree, plain debug files, a sysroot and a local
debuginfod server, with the original binaries gone. Names, file:line and
inlined calls are compared with eu-addr2line -i -f on the same addresses; a
different build at the original path is refused; corrupt debug files give
per-module problems, never a crash."""
import re
import shutil
import socket
import time
import urllib.request

from common import *

require_perf()
d = tmpdir()
CAPTURE_FRAMES = os.environ["CAPTURE_FRAMES"]

# The recording host: stripped binaries in /opt/app, debug files beside.
app = os.path.join(d, "host", "opt", "app")
dbg = os.path.join(d, "dbg")      # a .build-id tree
plain = os.path.join(d, "plain")  # the same debug files under plain names
for p in (app, plain):
    os.makedirs(p)
build_ids = {}
for name in ("unwind", "unwind_cpp", "libunwind_plugin.so"):
    dst = os.path.join(app, name)
    shutil.copy(fixture(name), dst)
    debug = os.path.join(plain, name + ".debug")
    check(run(["objcopy", "--only-keep-debug", dst, debug]).returncode == 0, "objcopy " + name)
    check(run(["strip", "--strip-all", dst]).returncode == 0, "strip " + name)
    out = run(["readelf", "-n", dst]).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", out).group(1)
    build_ids[name] = bid
    os.makedirs(os.path.join(dbg, ".build-id", bid[:2]), exist_ok=True)
    shutil.copy(debug, os.path.join(dbg, ".build-id", bid[:2], bid[2:] + ".debug"))
    check("debug_info" not in run(["readelf", "-S", dst]).stdout, name + " is stripped")

later = os.path.join(d, "later.mscap")
# Enough distinct addresses for the eu-addr2line comparison below on a fast
# machine: the recursion, qsort's comparator, C++ and the plugin.
unwind = os.path.join(app, "unwind")
script = "%s recurse 300; %s qsort; %s; %s dlopen %s" % (
    unwind, unwind, os.path.join(app, "unwind_cpp"), unwind, os.path.join(app, "libunwind_plugin.so"))
# At 3999 Hz the fixed work gives the comparison below far more than its 30
# distinct addresses, whatever the machine's speed (at 999 Hz: 27 to 31).
record(later, ["sh", "-c", script], extra=["--symbolize", "later", "-F", "3999"])
rep = report(later)
check(rep["header"]["symbols"] == "later", "the capture says it was recorded with --symbolize later")
check(rep["header"]["fully_named_samples"] == 0, "--symbolize later stores no names")
check(any(re.match(r"unwind\+0x[0-9a-f]+$", f["function"]) for f in rep["functions"]),
      "report shows unnamed frames as module+0xoffset")

# Another host: only the capture and the debug tree; the binaries are gone.
other = os.path.join(d, "other")
os.makedirs(other)
shutil.copy(later, os.path.join(other, "later.mscap"))
shutil.copytree(dbg, os.path.join(other, "dbg"))
shutil.rmtree(os.path.join(d, "host"))
moved = os.path.join(other, "later.mscap")


def symbolize(path, *extra, out=None, env=None):
    args = [MICROSCOPE, "symbolize", path, "--json", *extra]
    if out:
        args += ["-o", out]
    p = run(args, env=env)
    if p.returncode != 0:
        fail("symbolize %s exited %d: %s" % (extra, p.returncode, p.stderr))
    return json.loads(p.stdout)


def fixture_modules(summary):
    return {os.path.basename(m["path"]): m for m in summary["modules"]
            if os.path.basename(m["path"]) in build_ids}


def frames_of(path):
    """(module basename, vaddr) -> chain [(function, file, line)], innermost first."""
    out = {}
    for line in run([CAPTURE_FRAMES, path]).stdout.splitlines():
        parts = line.split("\t")
        mod = os.path.basename(parts[0])
        if mod not in build_ids:
            continue
        chain = [tuple(p.rsplit("|", 2)) for p in parts[3:]]
        out[(mod, int(parts[2], 16))] = chain
    return out


sym = os.path.join(other, "sym.mscap")
s = symbolize(moved, "--debug-dir", os.path.join(other, "dbg"), out=sym)
mods = fixture_modules(s)
check(set(mods) == set(build_ids), "every fixture module is in the summary: %s" % sorted(mods))
def plt_ranges(name):
    """[start, end) of the fixture's PLT sections: stubs no debug file names
    (a sample can land in one while ld.so binds a symbol)."""
    out = []
    for line in run(["readelf", "-SW", fixture(name)]).stdout.splitlines():
        m = re.search(r"\]\s+(\.plt\S*)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            out.append((int(m.group(2), 16), int(m.group(2), 16) + int(m.group(4), 16)))
    return out


frames = frames_of(sym)
in_plt_count = {}
for name, m in mods.items():
    plt = plt_ranges(name)
    unnamed = sorted(vaddr for (mod, vaddr), chain in frames.items()
                     if mod == name and (not chain or not chain[-1][0]))
    in_plt = [v for v in unnamed if any(a <= v < b for a, b in plt)]
    in_plt_count[name] = len(in_plt)
    check(m["named"] + len(in_plt) == m["frames"] and m["frames"] > 0,
          "%s: %d of %d frames named from the debug tree, %d more in its PLT (unnamed: %s)" %
          (name, m["named"], m["frames"], len(in_plt), ", ".join("0x%x" % v for v in unnamed)))
    check(m["used"] and m["used"][0].startswith(os.path.join(other, "dbg", ".build-id")),
          "%s: named from its .build-id debug file (%s)" % (name, m["used"]))


def all_named(modules):
    """Every frame of every fixture named, but for the PLT stubs found above
    (the same samples, so the same stubs, in every copy of the capture)."""
    return all(m["named"] + in_plt_count[name] == m["frames"] for name, m in modules.items())


check(mods["unwind"]["inline_frames"] > 0, "inlined calls became frames of their own")
rep = report(sym, "--tree", "--min-percent", "0")
paths = tree_paths(rep)
check(any(p[-3:] == ("run_recurse", "recurse", "recurse") for p in paths), "recursion named")
check(samples_under_chain(rep, ["leaf_hot", "burn_units"]) > 0,
      "burn_units, inlined into leaf_hot, is a frame under it")
check(samples_under_chain(rep, ["run_cpp(Worker&)", "SortingWorker::Run(int)"]) > 0,
      "C++ names are demangled")
check(samples_under_chain(rep, ["call_plugin", "plugin_burn"]) > 0, "the dlopened library is named")
# The raw (mangled) name is kept beside the demangled one: pprof's system_name.
pb = os.path.join(other, "sym.pb.gz")
check(run([MICROSCOPE, "convert", sym, "--to", "pprof", "-o", pb]).returncode == 0, "convert to pprof")
import gzip
raw = gzip.decompress(open(pb, "rb").read())
check(b"_Z12burn_comparejj" in raw and b"burn_compare(unsigned int, unsigned int)" in raw,
      "pprof carries both the demangled and the raw C++ name")

# Lines and inlined calls against eu-addr2line -i -f on the same addresses.
ours = frames_of(sym)
CLONE = re.compile(r"\.(part|isra|constprop|cold|lto_priv)(\.\d+)*$")
agree = compared = 0
disagreements = []
for name in build_ids:
    debug = os.path.join(other, "dbg", ".build-id", build_ids[name][:2], build_ids[name][2:] + ".debug")
    addrs = sorted(a for (m, a) in ours if m == name)
    p = run(["eu-addr2line", "-e", debug, "-a", "-f", "-i", "-C"] + ["0x%x" % a for a in addrs])
    theirs = {}
    cur = None
    lines = p.stdout.splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^0x[0-9a-f]+$", lines[i]):
            cur = int(lines[i], 16)
            theirs[cur] = []
            i += 1
            continue
        func = lines[i].split(" inlined at ")[0]
        loc = lines[i + 1] if i + 1 < len(lines) else "??:0"
        m = re.match(r"^(.*?):(\d+)(?::\d+)?$", loc)
        file, line = (m.group(1), m.group(2)) if m and m.group(2) != "0" else ("", "")
        theirs[cur].append((func, file, line))
        i += 2
    for a in addrs:
        mine = ours[(name, a)]
        want = theirs.get(a, [])
        if not want or all(f == "??" for f, _, _ in want):
            continue
        compared += 1
        same = len(mine) == len(want) and all(
            (mf == wf or CLONE.sub("", mf) == wf or (k == len(want) - 1 and wf == "??"))
            and (ml == wl) and (mfile == wfile or not wl)
            for k, ((mf, mfile, ml), (wf, wfile, wl)) in enumerate(zip(mine, want)))
        agree += same
        if not same:
            disagreements.append("%s 0x%x: ours %s, eu-addr2line %s" % (name, a, mine, want))
for line in disagreements[:20]:
    print("  disagree: " + line)
check(compared >= 30, "compared %d addresses with eu-addr2line" % compared)
check(agree * 100 >= compared * 99,
      "names, file:line and inlined calls agree with eu-addr2line -i -f: %d of %d" % (agree, compared))

# Symbolizing again changes nothing; the frames read back the same.
again = symbolize(sym, "--debug-dir", os.path.join(other, "dbg"), out=os.path.join(other, "again.mscap"))
check(again["changed"] == 0, "a symbolized capture symbolized again changes no frame")
check(frames_of(os.path.join(other, "again.mscap")) == ours, "and its frames are identical")

# Nothing to be found: every place looked is listed; then with the files, the
# same capture gains its names (in place, through a temporary and rename).
empty_root = os.path.join(other, "emptyroot")
os.makedirs(empty_root)
bare = os.path.join(other, "bare.mscap")
shutil.copy(moved, bare)
s = symbolize(bare, "--sysroot", empty_root)
m = fixture_modules(s)["unwind"]
check(m["named"] == 0 and m["unnamed"].get("no file found") == m["frames"],
      "no file anywhere: frames unnamed, reason 'no file found'")
check(any(empty_root in l for l in m["looked"]) and len(m["looked"]) >= 2,
      "the summary lists every place looked: %s" % m["looked"])
s = symbolize(bare, "--debug-dir", plain)
m = fixture_modules(s)
check(all_named(m),
      "plain debug files (no .build-id tree) are matched by their own build ID, in place")
check(m["unwind"]["used"][0].startswith(plain), "used %s" % m["unwind"]["used"])

# A sysroot holding the debug tree where the recording host had it.
root = os.path.join(other, "root")
shutil.copytree(os.path.join(other, "dbg", ".build-id"), os.path.join(root, "usr", "lib", "debug", ".build-id"))
s = symbolize(moved, "--sysroot", root, out=os.path.join(other, "sysroot.mscap"))
check(all_named(fixture_modules(s)),
      "--sysroot: named from SYSROOT/usr/lib/debug/.build-id")

# A decoy: another build of the same program at the original path.
decoy_root = os.path.join(other, "decoyroot")
decoy_path = decoy_root + os.path.join(app, "unwind_cpp")
os.makedirs(os.path.dirname(decoy_path))
shutil.copy(fixture("unwind_cpp_decoy"), decoy_path)
s = symbolize(moved, "--sysroot", decoy_root, out=os.path.join(other, "decoy.mscap"))
m = fixture_modules(s)["unwind_cpp"]
check(m["named"] == 0 and m["unnamed"].get("build ID mismatch") == m["frames"],
      "a different build at the original path is refused: %s" % m["unnamed"])
check(any("build ID mismatch" in l and decoy_path in l for l in m["looked"]), "and reported: %s" % m["looked"])
rep = report(os.path.join(other, "decoy.mscap"))
check(any(p["kind"] == "build ID mismatch, frames unnamed" for p in rep["header"]["problems"]),
      "the capture's problems say so")

# debuginfod: elfutils' server on 127.0.0.1 over the plain debug files.
with socket.socket() as sock:
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
server = subprocess.Popen(["debuginfod", "-p", str(port), "-d", os.path.join(d, "debuginfod.sqlite"),
                           "-F", plain], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    url = "http://127.0.0.1:%d" % port
    deadline = time.time() + 60
    ready = False
    while time.time() < deadline and not ready:
        try:
            with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, build_ids["unwind_cpp"]), timeout=5) as r:
                ready = r.status == 200
        except Exception:
            time.sleep(0.3)
    check(ready, "debuginfod serves the fixture's debug file")
    env = dict(os.environ, DEBUGINFOD_CACHE_PATH=os.path.join(d, "dicache"))
    env.pop("DEBUGINFOD_URLS", None)
    s = symbolize(moved, "--sysroot", empty_root, "--debuginfod", url, out=os.path.join(other, "di.mscap"), env=env)
    m = fixture_modules(s)
    check(all_named(m),
          "named through debuginfod: %s" % {k: (x["named"], x["frames"]) for k, x in m.items()})
    check(m["unwind"]["used"][0].startswith(os.path.join(d, "dicache")), "from its client cache")
    check(frames_of(os.path.join(other, "di.mscap")) == ours, "the same names, lines and inlines")
finally:
    server.terminate()
    server.wait(timeout=30)

# Corrupt debug files: per-module problems, never a crash.
def section(path, name):
    """(offset, size) of an ELF64 section."""
    import struct
    data = open(path, "rb").read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        h = sh(i)
        n = data[stroff + h[0]:data.index(b"\0", stroff + h[0])].decode()
        if n == name:
            return h[4], h[5]
    fail("no section " + name)


bad = os.path.join(other, "bad")
good = os.path.join(other, "dbg", ".build-id", build_ids["unwind"][:2], build_ids["unwind"][2:] + ".debug")
target = os.path.join(bad, ".build-id", build_ids["unwind"][:2], build_ids["unwind"][2:] + ".debug")
os.makedirs(os.path.dirname(target))
for what in ("unit length", "abbrev garbage", "truncated file"):
    data = bytearray(open(good, "rb").read())
    off, size = section(good, ".debug_info")
    if what == "unit length":
        data[off:off + 4] = (0xFFFFFFF0).to_bytes(4, "little")  # a unit longer than the section
    elif what == "abbrev garbage":
        aoff, asize = section(good, ".debug_abbrev")
        data[aoff:aoff + asize] = bytes((i * 37 + 11) & 0xFF for i in range(asize))
    else:
        data = data[:off + size // 2]
    open(target, "wb").write(data)
    p = run([MICROSCOPE, "symbolize", moved, "--json", "--debug-dir", bad, "--sysroot", empty_root,
             "-o", os.path.join(other, "bad.mscap")])
    check(p.returncode == 0 and "Traceback" not in p.stderr, "%s: symbolize completes (exit %d)" % (what, p.returncode))
    m = fixture_modules(json.loads(p.stdout))["unwind"]
    # The corrupt file itself is named: as a problem (its DWARF unreadable),
    # or as a candidate refused with its reason; neither "not there" (it is
    # there) nor taken as it is.
    named = [p for p in m["problems"] if target in p]
    refused = [l for l in m["looked"] if l.startswith("debug dir %s: " % target) and
               not l.endswith(": not there") and "build ID matches" not in l]
    check(named or refused, "%s: a per-module problem naming %s: %s" % (what, target, named or refused or
                                                                       (m["problems"], m["looked"])))
    check(run([MICROSCOPE, "report", os.path.join(other, "bad.mscap")]).returncode == 0,
          "%s: the output capture is valid" % what)
