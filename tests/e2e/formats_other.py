"""folded, Chrome trace and speedscope output of a capture shaped like a
recording of the threads fixture (built without perf), and folded
import: folded lines equal the tree's leaf counts; the Chrome JSON follows the
Trace Event rules; speedscope's file parses with every frame resolving."""
import json

from common import *

d = tmpdir()
cap = d + "/threads.mscap"
make_capture(cap, "threads")
rep = report(cap, "--tree", "--min-percent", "0")

# folded: each line's count is the tree's self count at that path.
folded = d + "/out.folded"
check(run([MICROSCOPE, "convert", cap, "-o", folded]).returncode == 0, "convert to folded (by the .folded name)")
lines = {}
for line in open(folded):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    lines[tuple(stack.split(";"))] = int(n)
leaves = {}

def walk(node, prefix):
    path = prefix + (node["function"],)
    if node["self"]["samples"]:
        leaves[path] = node["self"]["samples"]
    for c in node["children"]:
        walk(c, path)

for r in rep["tree"]:
    walk(r, ())
check(lines == leaves, "folded lines equal the tree's leaf counts (%d stacks)" % len(lines))
check(sum(lines.values()) == rep["header"]["samples"], "folded counts add up to the samples")

# folded import, and report on it.
back = d + "/folded.mscap"
check(run([MICROSCOPE, "convert", folded, "-o", back]).returncode == 0, "folded imports")
rb = report(back)
ours = {f["function"]: f["self"]["samples"] for f in rep["functions"]}
theirs = {f["function"]: f["self"]["samples"] for f in rb["functions"]}
check(ours == theirs, "imported folded has the same self counts")
bad = d + "/bad.folded"
with open(bad, "w") as f:
    f.write("a;b 3\na;c three\n")
p = run([MICROSCOPE, "convert", bad, "-o", d + "/bad.mscap"])
check(p.returncode == 1 and p.stderr.strip() == "microscope: error: %s: line 2: count 'three' is not a whole number" % bad,
      "bad folded line refused: %r" % p.stderr.strip())

# Hostile imports, refused with a bounded cost: a 200 MB folded line, and a
# gzipped pprof bomb padded with zeros (the inflate limit is fixed, not
# grown with the file's size). The converter's peak memory is its RSS.
import gzip
import resource
long_line = d + "/long.folded"
with open(long_line, "w") as f:
    f.write("a;b 1\n" + "x" * (200 << 20) + " 1\n")
padded = d + "/padded.pb.gz"
with open(padded, "wb") as f:
    f.write(gzip.compress(b"\0" * (1 << 20), 1) + b"\0" * (4 << 20))
bomb = d + "/bomb.pb.gz"
with open(bomb, "wb") as f:
    f.write(gzip.compress(b"\0" * ((256 << 20) + 1), 1) + b"\0" * (4 << 20))
for path, want in ((long_line, "line 2: longer than 1 MiB (209715202 bytes): not a folded stack"),
                   (padded, "4194304 bytes after the gzip member's end"),
                   (bomb, "inflates past 268435456 bytes")):
    p = run([MICROSCOPE, "convert", path, "-o", d + "/hostile.mscap"])
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    check(p.returncode == 1 and want in p.stderr and path in p.stderr and len(p.stderr) < 1000,
          "%s refused with the place named, briefly: %r" % (os.path.basename(path), p.stderr.strip()[:300]))
    check(not os.path.exists(d + "/hostile.mscap"), "nothing written for %s" % os.path.basename(path))
check(peak_mb < 1200, "the largest converter of these stayed under 1.2 GB: %.0f MB" % peak_mb)
# The ceiling is an option: a real profile that inflates to ~2 MiB is
# refused under --max-inflate 1M and read under the default.
real_pb = d + "/real.pb.gz"
check(run([MICROSCOPE, "convert", cap, "--to", "pprof", "-o", real_pb]).returncode == 0, "convert to pprof")
with open(real_pb, "rb") as f:
    raw = gzip.decompress(f.read())
big_pb = d + "/big.pb.gz"
with open(big_pb, "wb") as f:  # the same profile, its string table padded to 2 MiB
    f.write(gzip.compress(raw + b"\x32\x80\x80\x80\x01" + b"s" * (2 << 20)))
p = run([MICROSCOPE, "convert", big_pb, "--max-inflate", "1M", "-o", d + "/big.mscap"])
check(p.returncode == 1 and "inflates past 1048576 bytes" in p.stderr and big_pb in p.stderr,
      "--max-inflate 1M refuses a 2 MiB profile: %r" % p.stderr.strip()[:300])
check(not os.path.exists(d + "/big.mscap"), "nothing written past --max-inflate")
p = run([MICROSCOPE, "convert", big_pb, "-o", d + "/big.mscap"])
check(p.returncode == 0 and os.path.exists(d + "/big.mscap"),
      "the same profile under the default ceiling is read: %r" % p.stderr.strip()[:300])
p = run([MICROSCOPE, "convert", big_pb, "--max-inflate", "zero", "-o", d + "/big2.mscap"])
check(p.returncode == 2 and "--max-inflate" in p.stderr, "a bad --max-inflate is refused: %r" % p.stderr.strip())

# Chrome trace: the Trace Event format's rules.
trace = d + "/trace.json"
check(run([MICROSCOPE, "convert", cap, "--to", "chrome", "-o", trace]).returncode == 0, "convert to chrome")
j = json.load(open(trace))
threads = {(t["pid"], t["tid"]): t["name"] for t in rep["header"]["threads"]}
named = {}
for e in j["traceEvents"]:
    check_ok = e["ph"] in ("M", "X") and isinstance(e["pid"], int) and isinstance(e["tid"], int)
    if not check_ok:
        fail("bad event %s" % e)
    if e["ph"] == "M" and e["name"] == "thread_name":
        named[(e["pid"], e["tid"])] = e["args"]["name"]
    if e["ph"] == "X" and (e["dur"] < 0 or e["ts"] < 0):
        fail("slice with a negative time: %s" % e)
check(named == threads, "every thread has a thread_name event with its name")
check(any(e["ph"] == "X" and e["name"] == "work_c" for e in j["traceEvents"]), "slices name the functions")
sample_ts = {}
for s in j["samples"]:
    if s["sf"] not in j["stackFrames"]:
        fail("sample's stack frame %s does not resolve" % s["sf"])
    key = (s["pid"], s["tid"])
    if s["ts"] < sample_ts.get(key, 0):
        fail("samples' timestamps go back in time on thread %s" % (key,))
    sample_ts[key] = s["ts"]
for fid, frame in j["stackFrames"].items():
    if "parent" in frame and frame["parent"] not in j["stackFrames"]:
        fail("stack frame %s's parent does not resolve" % fid)
check(sum(s["weight"] for s in j["samples"]) == rep["header"]["samples"], "Chrome samples cover every sample; frames resolve; times monotonic per thread")

# speedscope.
ss = d + "/out.speedscope.json"
check(run([MICROSCOPE, "convert", cap, "-o", ss]).returncode == 0, "convert to speedscope (by name)")
j = json.load(open(ss))
frames = j["shared"]["frames"]
total = 0
for prof in j["profiles"]:
    check(prof["type"] == "sampled" and len(prof["samples"]) == len(prof["weights"]), "profile %s well formed" % prof["name"])
    for s in prof["samples"]:
        if any(f >= len(frames) for f in s):
            fail("unresolved frame in %s" % prof["name"])
    total += len(prof["samples"])
check(total == rep["header"]["samples"], "speedscope has every sample")
check(any(frames[f]["name"] == "work_b" for p in j["profiles"] for s in p["samples"] for f in s),
      "stacks name the workers")

# convert --help says what each format cannot carry.
h = run([MICROSCOPE, "convert", "--help"]).stdout
check("cannot carry" in h and "folded      time" in h, "convert --help lists what each format drops")
# microscope --help lists each command by its first sentence only.
top = run([MICROSCOPE, "--help"]).stdout
commands = [l.split()[0] for l in top.split("Subcommands:")[1].splitlines() if l.strip()]
check(len(top.splitlines()) <= 10 + len(commands) and "cannot carry" not in top and
      sorted(commands) == sorted(["record", "report", "convert", "symbolize", "syscalls", "serve",
                                  "snapshot", "query", "doctor", "triage", "import"]),
      "microscope --help: %d lines, one per command (%s)" % (len(top.splitlines()), commands))

# convert --inlines off: inlined burn_units folds into the functions that hold it.
split = d + "/split.mscap"
make_capture(split, "split")
on, off = d + "/on.folded", d + "/off.folded"
check(run([MICROSCOPE, "convert", split, "-o", on]).returncode == 0, "convert split to folded")
check(run([MICROSCOPE, "convert", split, "--inlines", "off", "-o", off]).returncode == 0,
      "convert --inlines off")
on_lines = open(on).read().split("\n")
off_lines = open(off).read().split("\n")
check(any(l.split(" ")[0].endswith(";burn_units") for l in on_lines if l), "burn_units is a frame: %s" % on_lines)
check(not any("burn_units" in l for l in off_lines), "no burn_units with --inlines off: %s" % off_lines)
count = lambda lines: sum(int(l.rsplit(" ", 1)[1]) for l in lines if l)
check(count(on_lines) == count(off_lines), "the same samples either way")
p = run([MICROSCOPE, "convert", split, "--inlines", "off", "-o", d + "/x.mscap"])
check(p.returncode == 2 and "apply to exports" in p.stderr, "--inlines off refused for a capture: %r" % p.stderr)
p = run([MICROSCOPE, "convert", split, "--look", "python", "-o", d + "/x.mscap"])
check(p.returncode == 2 and "--look apply to exports" in p.stderr,
      "--look refused for a capture: %r" % p.stderr)
