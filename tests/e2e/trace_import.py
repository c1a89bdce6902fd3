"""Other tools' traces on a capture's timeline (microscope import), from real
recordings: PyTorch's own profile of a small model (Debian's python3-torch
1.13, fetched by scripts/fetch-torch) placed by the anchor the script marks,
its matrix products over the samples of the BLAS code that ran them; a
Python program that keeps a trace of its own as PyTorch's
profiler does (tests/fixtures/python/trace_writer.py), placed by an anchor
both sides recorded (torch 1.13's form: times relative to its start, no
clock) and by Kineto's base time, its spans over the samples of the
functions they measured; Node's own trace events (a real program's), placed
by CLOCK_MONOTONIC; and what is refused: a trace imported twice, a
placement that names nothing, malformed JSON (the file and the byte or
event said, nothing written)."""
import gzip
import hashlib
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (MICROSCOPE, SANITIZED, check, fail, require, require_perf, run,  # noqa: E402
                    tmpdir)

require_perf()
HERE = os.path.dirname(os.path.abspath(__file__))
SDK_PYTHON = os.path.realpath(os.path.join(HERE, "..", "..", "sdk", "python"))
WRITER = os.path.realpath(os.path.join(HERE, "..", "fixtures", "python", "trace_writer.py"))
PYTHON = "/usr/bin/python3.11"  # Debian's
d = tmpdir()
ROUNDS = 3


def query(path, sql):
    p = run([MICROSCOPE, "query", "--format", "json", path, sql])
    if p.returncode != 0:
        fail("query %s: %s" % (sql, p.stderr))
    return json.loads(p.stdout)


def imported(trace, capture, *extra, out=None, rc=0):
    args = [MICROSCOPE, "import", trace, "--into", capture, *extra]
    if out:
        args += ["-o", out]
    p = run(args)
    if p.returncode != rc:
        fail("import %s %s exited %d (want %d): %s" % (trace, extra, p.returncode, rc, p.stderr))
    return p


def phases_over_samples(path, tag):
    """Each phase span's samples (the traced thread's, inside the span) and
    how many of them were in the phase's own Python function."""
    rows = query(path, """
        SELECT e.name AS span, count(*) AS samples,
               sum(stack_contains(s.stack, '^' || e.name || '$')) AS own
        FROM trace_events e JOIN trace_tracks k ON k.id = e.track
        JOIN threads t ON t.tid = k.tid
        JOIN samples s ON s.thread = t.id AND s.time >= e.start AND s.time < e."end"
        WHERE e.name IN ('alpha', 'beta') GROUP BY e.name""")
    got = {r["span"]: r for r in rows}
    for phase in ("alpha", "beta"):
        r = got.get(phase)
        check(r is not None and r["samples"] >= 40,
              "%s: samples inside the %s spans (%s)" % (tag, phase, r and r["samples"]))
        check(r["own"] >= 0.9 * r["samples"],
              "%s: %d of the %d samples inside %s spans are in %s() (at least 90%%)" %
              (tag, r["own"], r["samples"], phase, phase))


# --- torch 1.13's form: no clock, placed by the anchor ---------------------
env = dict(os.environ, PYTHONPATH=SDK_PYTHON)
cap = os.path.join(d, "relative.mscap")
rel = os.path.join(d, "relative.json")
p = run([MICROSCOPE, "record", "-q", "--probes", "all", "-o", cap, "--", PYTHON, WRITER, rel,
         "relative", str(ROUNDS)], env=env, timeout=120)
check(p.returncode == 0, "the program recorded with its own trace (%d): %s" % (p.returncode, p.stderr[-300:]))
before = open(cap, "rb").read()

# Without a placement it stays on its own axis and says so.
own = os.path.join(d, "own.mscap")
p = imported(rel, cap, out=own)
check("kept on its own axis" in p.stderr and "--anchor" in p.stderr,
      "without a clock the import says it keeps the trace on its own axis: %s" % p.stderr.strip())
rep = json.loads(run([MICROSCOPE, "report", "--json", "--spans", "--lanes", own]).stdout)
src = rep["traces"]["sources"][0]
check(src["clock"] == "own-axis" and src["mapped_tracks"] == 0,
      "own axis: clock %s, %d tracks mapped" % (src["clock"], src["mapped_tracks"]))
check(all(r["samples"] == 0 for r in rep["traces"]["spans"]),
      "own axis: no samples are counted inside its spans")
check(rep["lanes"].get("own_axis_traces") == [rel] and "trace_tracks" not in rep["lanes"],
      "own axis: not drawn on the recording's lanes, and named as such")
text = run([MICROSCOPE, "report", "--lanes", own]).stdout
check("on its own axis" in text, "the text report says the trace is on its own axis")

# By the anchor: the span around the program's microscope.mark().
anchored = os.path.join(d, "anchored.mscap")
p = imported(rel, cap, "--anchor", "microscope_anchor", out=anchored)
check(open(cap, "rb").read() == before, "-o leaves --into as it was")
rep = json.loads(run([MICROSCOPE, "report", "--json", "--spans", anchored]).stdout)
src = rep["traces"]["sources"][0]
check(src["clock"] == "anchor" and src["uncertainty_ns"] is not None and src["uncertainty_ns"] < 5e6,
      "anchor: placed within %s ns" % src["uncertainty_ns"])
check(src["path"] == rel, "the trace's path is recorded")
track = query(anchored, "SELECT * FROM trace_tracks")[0]
target = query(anchored, "SELECT pid, tid FROM threads ORDER BY start_time LIMIT 1")[0]
check(track["mapped_by"] == "anchor" and track["pid"] == target["pid"] and track["tid"] == target["tid"],
      "anchor: the trace's \"CPU functions\" thread is the program's main thread (%s)" % track)
phases_over_samples(anchored, "anchor")
digest = query(anchored, "SELECT digest FROM traces")[0]["digest"]
check(digest == hashlib.sha256(open(rel, "rb").read()).hexdigest(), "the trace's SHA-256 is recorded")
spans = {r["name"]: r for r in rep["traces"]["spans"]}
check(spans["alpha"]["count"] == ROUNDS and 70e6 <= spans["alpha"]["p50_ns"] <= 200e6,
      "report --spans: alpha %d times, p50 %d ns (80 ms of work)" %
      (spans["alpha"]["count"], spans["alpha"]["p50_ns"]))

# Imported twice: refused, the capture left as it was.
again = open(anchored, "rb").read()
p = imported(rel, anchored, "--anchor", "microscope_anchor", rc=2)
check("holds this trace already" in p.stderr and rel in p.stderr,
      "a trace imported twice is refused: %s" % p.stderr.strip())
check(open(anchored, "rb").read() == again, "the refused import changed nothing")
# An anchor neither side has.
p = imported(rel, cap, "--anchor", "nothing", out=os.path.join(d, "x.mscap"), rc=1)
check("0 events of that name in the trace" in p.stderr and not os.path.exists(os.path.join(d, "x.mscap")),
      "an anchor that names nothing is refused, nothing written: %s" % p.stderr.strip())

# The Chrome export carries the imported track beside the samples' threads.
chrome = os.path.join(d, "anchored.json")
p = run([MICROSCOPE, "convert", anchored, "-o", chrome])
check(p.returncode == 0, "converted to Chrome trace JSON")
events = json.load(open(chrome))["traceEvents"]
ours = [e for e in events if str(e.get("cat", "")).startswith("imported") and e.get("name") == "alpha"]
check(len(ours) == ROUNDS and all(e["pid"] == target["pid"] for e in ours),
      "the Chrome export has the %d alpha spans in the program's process" % len(ours))

# --- Kineto's form: placed by its base time ---------------------------------
kcap = os.path.join(d, "kineto.mscap")
kjson = os.path.join(d, "kineto.json")
p = run([MICROSCOPE, "record", "-q", "-o", kcap, "--", PYTHON, WRITER, kjson, "kineto", str(ROUNDS)],
        env=env, timeout=120)
check(p.returncode == 0, "the Kineto-form program recorded (%d): %s" % (p.returncode, p.stderr[-300:]))
gz = kjson + ".gz"
with open(kjson, "rb") as f, gzip.open(gz, "wb") as g:
    shutil.copyfileobj(f, g)
imported(gz, kcap)  # in place
rep = json.loads(run([MICROSCOPE, "report", "--json", "--spans", kcap]).stdout)
src = rep["traces"]["sources"][0]
check(src["format"] == "kineto" and src["clock"] == "base-time",
      "Kineto (gzipped): %s, placed by %s" % (src["format"], src["clock"]))
phases_over_samples(kcap, "base time")
tracks = {r["kind"]: r for r in query(kcap, "SELECT * FROM trace_tracks")}
check("device" in tracks and tracks["device"]["name"] == "stream 7" and
      tracks["device"]["group"] == "python [GPU 0]",
      "the GPU's stream is a device track of its own: %s" % tracks.get("device"))
flows = query(kcap, """SELECT f.name, a.name AS launch, b.name AS kernel FROM trace_flows f
                       JOIN trace_events a ON a.id = f.from_event
                       JOIN trace_events b ON b.id = f.to_event""")
check(len(flows) == ROUNDS and all(f["launch"] == "cudaLaunchKernel" and f["kernel"] == "gemm_kernel"
                                   for f in flows),
      "each launch is linked to its kernel (%d flows)" % len(flows))
props = query(kcap, "SELECT count(*) AS n FROM traces WHERE clock_note LIKE '%baseTimeNanoseconds%'")
check(props[0]["n"] == 1, "the placement says it used the base time")

# --- Node's own trace events: a real program's, CLOCK_MONOTONIC -------------
ncap = os.path.join(d, "node.mscap")
script = os.path.join(d, "work.js")
with open(script, "w") as f:
    f.write("function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
            "let junk = [];\n"
            "for (let i = 0; i < 40; i++) { fib(24); junk.push(new Array(20000).fill(i)); "
            "if (junk.length > 5) junk = []; }\n")
ntrace = os.path.join(d, "node_trace.json")
p = run([MICROSCOPE, "record", "-q", "-o", ncap, "--", "/usr/bin/node", "--trace-event-categories",
         "v8", "--trace-event-file-pattern", ntrace, script], timeout=120)
check(p.returncode == 0 and os.path.exists(ntrace), "node recorded with its trace events (%d): %s" %
      (p.returncode, p.stderr[-300:]))
imported(ntrace, ncap, "--clock", "monotonic")
rows = query(ncap, """SELECT k.mapped_by, k.pid, count(*) AS n, min(e.start) AS first,
                             max(e."end") AS last, c.start_time, c.end_time
                      FROM trace_events e JOIN trace_tracks k ON k.id = e.track
                      JOIN captures c GROUP BY k.id ORDER BY n DESC""")
main = rows[0]
node_pid = query(ncap, "SELECT pid FROM processes LIMIT 1")[0]["pid"]
check(main["mapped_by"] == "pid" and main["pid"] == node_pid,
      "node's main thread track is node's process by its own pid (%s)" % main)
check(main["start_time"] <= main["first"] and main["last"] <= main["end_time"],
      "on CLOCK_MONOTONIC, node's events lie inside the recording (%d..%d in %d..%d)" %
      (main["first"], main["last"], main["start_time"], main["end_time"]))

# --- PyTorch: a real profile, placed by the anchor the script marks --------
TORCH_MODEL = """
import sys
import time
import torch
import microscope
from torch.profiler import profile, record_function, ProfilerActivity
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512))
x = torch.randn(256, 512)
with profile(activities=[ProfilerActivity.CPU]) as prof:
    with record_function("microscope_anchor"):
        microscope.mark("microscope_anchor")
    for _ in range(int(sys.argv[2])):
        y = model(x)
        end = time.perf_counter() + 0.04  # Python's own work between the products
        while time.perf_counter() < end:
            pass
prof.export_chrome_trace(sys.argv[1])
"""
# Between the model's calls the script works in Python for 40 ms, so a
# trace placed 40 ms off puts Python's samples in the matrix products.
# The GEMM code that runs aten::addmm and aten::mm on a CPU: BLAS (Debian's
# reference libblas3 names it sgemm_; OpenBLAS sgemm_kernel..., MKL
# mkl_blas_...), oneDNN (dnnl_...), or libtorch's own (at::native::cpublas).
GEMM = r"(^|[^a-z])([sdcz]gemm|cblas_[sdcz]gemm|mkl_blas|dnnl|at::native::cpublas)"
if not SANITIZED:  # the readers it drives are the Python program's above
    fetch = run([os.path.join(HERE, "..", "..", "scripts", "fetch-torch")], timeout=1200)
    require(fetch.returncode == 0, "Debian's python3-torch (scripts/fetch-torch): %s" % fetch.stderr[-300:])
    model = os.path.join(d, "model.py")
    with open(model, "w") as f:
        f.write(TORCH_MODEL)
    tcap = os.path.join(d, "torch.mscap")
    tjson = os.path.join(d, "torch.json")
    p = run([MICROSCOPE, "record", "-q", "--probes", "all", "-o", tcap, "--", PYTHON, model, tjson, "12"],
            env=env, timeout=300)
    check(p.returncode == 0, "a PyTorch model's run recorded with its profiler on (%d): %s" %
          (p.returncode, p.stderr[-300:]))
    with open(tjson) as f:
        first = json.load(f)[0]
    check(first["pid"] == "CPU functions", "torch writes its 1.13 form (pid %r, no clock)" % first["pid"])
    p = imported(tjson, tcap, out=os.path.join(d, "torch-own.mscap"))
    check("kept on its own axis" in p.stderr, "without the anchor PyTorch's trace stays on its own axis")
    imported(tjson, tcap, "--anchor", "microscope_anchor")
    r = query(tcap, """
        SELECT count(*) AS samples, sum(stack_contains(s.stack, '%s')) AS gemm
        FROM trace_events e JOIN trace_tracks k ON k.id = e.track
        JOIN threads t ON t.tid = k.tid
        JOIN samples s ON s.thread = t.id AND s.time >= e.start AND s.time < e."end"
        WHERE e.name IN ('aten::addmm', 'aten::mm') AND e.depth = (
            SELECT min(depth) FROM trace_events WHERE name IN ('aten::addmm', 'aten::mm'))""" %
              GEMM.replace("'", "''"))[0]
    check(r["samples"] >= 200, "PyTorch: %d samples inside aten::addmm/aten::mm spans" % r["samples"])
    check(r["gemm"] >= 0.9 * r["samples"],
          "PyTorch: %d of the %d samples inside aten::addmm/aten::mm are in GEMM code (%s)" %
          (r["gemm"], r["samples"], GEMM))
    top = query(tcap, "SELECT * FROM traces")[0]
    check(top["clock"] == "anchor", "PyTorch's trace placed by the anchor (%s)" % top["clock_note"])

# --- node --cpu-prof: V8's own samples read as sampled stacks -------------
prof_dir = os.path.join(d, "prof")
p = run(["/usr/bin/node", "--cpu-prof", "--cpu-prof-dir", prof_dir, script], timeout=120)
check(p.returncode == 0, "node --cpu-prof ran (%d): %s" % (p.returncode, p.stderr[-300:]))
prof = os.path.join(prof_dir, os.listdir(prof_dir)[0])
with open(prof) as f:
    v8 = json.load(f)
pcap = os.path.join(d, "cpuprofile.mscap")
p = run([MICROSCOPE, "convert", prof, "-o", pcap])
check(p.returncode == 0, "a .cpuprofile converts to a capture (%d): %s" % (p.returncode, p.stderr))
rep = json.loads(run([MICROSCOPE, "report", "--json", pcap]).stdout)
check(rep["header"]["samples"] == len(v8["samples"]),
      ".cpuprofile: %d samples, as V8 took (%d)" % (rep["header"]["samples"], len(v8["samples"])))
check(abs(rep["all"]["value"] - (v8["endTime"] - v8["startTime"] - v8["timeDeltas"][0]) * 1000) <= 1000,
      ".cpuprofile: the samples weigh the profile's time (%d ns)" % rep["all"]["value"])
# V8's own count of each function's samples (hitCount), against the report's self.
hits = {}
for n in v8["nodes"]:
    name = n["callFrame"]["functionName"] or "(anonymous)"
    if name != "(root)":
        hits[name] = hits.get(name, 0) + n.get("hitCount", 0)
mine = {f["function"]: f["self"]["samples"] for f in rep["functions"]}
check(hits.get("fib", 0) > 0 and mine.get("fib") == hits["fib"],
      ".cpuprofile: fib's self samples %s, V8's hit count %s" % (mine.get("fib"), hits.get("fib")))
fib = query(pcap, "SELECT file, line FROM frames WHERE name = 'fib'")
check(len(fib) == 1 and fib[0]["file"].endswith("work.js") and fib[0]["line"] == 1,
      ".cpuprofile: fib is named with its script and first line (%s)" % fib)

# --- Malformed input: the file and the place said, nothing written ----------
bad = os.path.join(d, "bad.json")
with open(bad, "w") as f:
    f.write('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1}, {"ts": 3}]}')
out = os.path.join(d, "bad.mscap")
p = imported(bad, cap, out=out, rc=1)
check("%s: event 1: no \"ph\"" % bad in p.stderr and not os.path.exists(out),
      "an event without its phase is named, nothing written: %s" % p.stderr.strip())
with open(bad, "w") as f:
    f.write('[{"ph": "X", "ts": 1,, "dur": 2}]')
p = imported(bad, cap, out=out, rc=1)
check("%s: byte " % bad in p.stderr and "malformed JSON" in p.stderr and not os.path.exists(out),
      "malformed JSON is named by its byte, nothing written: %s" % p.stderr.strip())
p = imported(cap, cap, out=out, rc=1)
check("not a trace this command reads" in p.stderr, "a capture is not taken for a trace")
print("trace_import: ok")
