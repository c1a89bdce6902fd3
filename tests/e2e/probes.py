"""The probes SDK end to end: C and C++ programs record zones, marks, labels
and counters with `record --probes`; report --zones pairs them (counts
exact, durations as the program measured them), --zone filters samples to
a zone, nested/overlapping/unmatched zones keep their shapes, run-time
sites defined mid-run are found, an attached recorder finds a running
program's sites, a killed recorder leaves the program running with cheap
writes, and a module of another layout version is refused by name."""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import time

from common import *

require_perf()
d = tmpdir()


def zones(path, *extra):
    rep = report(path, "--zones", *extra)
    return rep, {r["zone"]: r for r in rep["zones"]["rows"]}


def problems(rep):
    return {p["kind"]: p for p in rep["header"].get("problems", [])}


# Timed zones: 1000 of 2 ms asleep, 1000 of 1 ms on CPU.
out = d + "/timed.mscap"
p = record(out, [fixture("probes"), "timed", "1000"], ["--probes", "all"])
m = re.search(r"sleep_ns (\d+) spin_ns (\d+)", p.stdout)
check(m is not None, "the fixture said what it measured: %r" % p.stdout)
slept, spun = int(m.group(1)), int(m.group(2))
rep, z = zones(out)
check(set(z) == {"sleep", "spin"}, "zones sleep and spin: %s" % sorted(z))
for name, own in (("sleep", slept), ("spin", spun)):
    r = z[name]
    check(r["count"] == 1000, "%s: %d occurrences (want 1000)" % (name, r["count"]))
    check(r["open_at_end"] == 0 and r["unmatched_ends"] == 0, "%s: all paired (open %d, unmatched %d)" % (name, r["open_at_end"], r["unmatched_ends"]))
    check(abs(r["total_ns"] - own) <= 0.05 * own,
          "%s: %.1f ms in zones, the program measured %.1f ms" % (name, r["total_ns"] / 1e6, own / 1e6))
check(0.95e6 <= z["spin"]["p50"]["duration_ns"] <= 1.05e6, "spin p50 %d ns (1 ms)" % z["spin"]["p50"]["duration_ns"])
check(2.0e6 <= z["sleep"]["p50"]["duration_ns"] <= 2.5e6, "sleep p50 %d ns (2 ms asleep)" % z["sleep"]["p50"]["duration_ns"])
check(z["spin"]["max"]["duration_ns"] >= z["spin"]["p99"]["duration_ns"] >= z["spin"]["p50"]["duration_ns"],
      "percentiles in order: %s" % [z["spin"][k]["duration_ns"] for k in ("p50", "p99", "max")])
check(z["spin"]["max"]["tid"] > 0 and z["spin"]["max"]["thread"] == "probes", "max exemplar names its thread")
zs = rep["zones"]
check(zs["marks"] == 1000 and zs["counter_records"] == 1000, "1000 marks and counters: %d, %d" % (zs["marks"], zs["counter_records"]))
check(zs["label_records"] == 3001, "3 labels a round and a clear: %d" % zs["label_records"])
# CPU samples of the spinning code fall inside the spinning zone.
spin_all = functions(report(out))["spin_for"][1]
spin_in = functions(report(out, "--zone", "spin"))["spin_for"][1]
check(spin_all > 500, "spin_for sampled %d times" % spin_all)
check(spin_in >= 0.95 * spin_all, "spin_for: %d of %d samples inside zone spin" % (spin_in, spin_all))
check(z["spin"]["samples"] >= 0.95 * spin_all,
      "zone spin holds %d samples innermost (spin_for: %d)" % (z["spin"]["samples"], spin_all))
check(z["sleep"]["samples"] < 0.05 * spin_all, "few samples asleep: %d" % z["sleep"]["samples"])
p = run([MICROSCOPE, "report", "--zone", "nosuch", out])
check(p.returncode != 0 and "no zone 'nosuch'" in p.stderr and "sleep" in p.stderr,
      "an unknown zone is refused, naming the zones: %r" % p.stderr)
# Chrome trace: zones as slices, marks as instants, counters as a counter track.
chrome = d + "/timed.json"
p = run([MICROSCOPE, "convert", out, "--to", "chrome", "-o", chrome])
check(p.returncode == 0, "convert --to chrome: %s" % p.stderr)
with open(chrome) as f:
    events = json.load(f)["traceEvents"]
slices = {}
for e in events:
    if e.get("cat") == "zone" and e["ph"] == "X":
        slices.setdefault(e["name"], []).append(e["dur"])
check(sorted(slices) == ["sleep", "spin"] and all(len(v) == 1000 for v in slices.values()),
      "1000 slices of each zone: %s" % {k: len(v) for k, v in slices.items()})
check(abs(sum(slices["spin"]) * 1000 - z["spin"]["total_ns"]) < 1e6, "slices last as long as the zones")
check(sum(1 for e in events if e["ph"] == "i" and e.get("cat") == "mark") == 1000, "1000 mark instants")
counters = [e for e in events if e["ph"] == "C"]
check(len(counters) == 1000 and counters[-1]["args"]["value"] == 1000.0,
      "a counter track of 1000 values ending at 1000: %s" % counters[-1:])
zone_tracks = [e for e in events if e["ph"] == "M" and e["args"]["name"].startswith("zones of probes")]
check(len(zone_tracks) == 1, "one track of zones for the thread: %s" % zone_tracks)
# pprof: the innermost zone and the program's labels as sample labels.
pb = d + "/timed.pb.gz"
p = run([MICROSCOPE, "convert", out, "--to", "pprof", "-o", pb])
check(p.returncode == 0, "convert --to pprof: %s" % p.stderr)
p = run([os.environ["PPROF"], "-raw", pb])
check(p.returncode == 0, "pprof reads it: %s" % p.stderr[-300:])
tags = run([os.environ["PPROF"], "-tags", pb]).stdout
m = re.search(r"\(\s*([\d.]+)%\): spin\n", tags[tags.find(" zone: Total"):])
check(" zone: Total" in tags and m and float(m.group(1)) >= 90,
      "pprof's zone tag: spin holds most samples: %s" % tags[tags.find(" zone:"):][:200])
check(re.search(r"phase: Total", tags) and "spinning" in tags, "the program's label phase is a tag")

text = run([MICROSCOPE, "report", "--zones", out]).stdout
check("Zones: 2 zones" in text and " spin" in text, "the terminal table: %r" % text[-600:])

# Nested, overlapping, unmatched and open zones.
out = d + "/shapes.mscap"
record(out, [fixture("probes"), "shapes"], ["--probes", "all"])
rep, z = zones(out)
check(z["outer"]["count"] == 20 and z["inner"]["count"] == 20, "20 outer and inner: %s" % {k: r["count"] for k, r in z.items()})
o = z["outer"]
check(abs(o["self_ns"] - (o["total_ns"] - z["inner"]["total_ns"])) < 1000,
      "outer's self is its time outside inner: %d of %d" % (o["self_ns"], o["total_ns"]))
check(z["inner"]["self_ns"] == z["inner"]["total_ns"], "inner has no children")
for name in ("overlap.a", "overlap.b"):
    r = z[name]
    check(r["count"] == 10 and r["self_ns"] == r["total_ns"],
          "%s: 10 occurrences (%d), not nested in each other (self %d of %d)" % (name, r["count"], r["self_ns"], r["total_ns"]))
    check(1.9e6 <= r["p50"]["duration_ns"] <= 2.5e6, "%s lasts 2 ms: %d ns" % (name, r["p50"]["duration_ns"]))
check(z["unmatched"]["unmatched_ends"] == 3 and z["unmatched"]["count"] == 0,
      "3 ends without a begin, kept as such: %d" % z["unmatched"]["unmatched_ends"])
check(z["never ends"]["open_at_end"] == 1 and z["never ends"]["count"] == 0,
      "a zone open at the end stays open: %d" % z["never ends"]["open_at_end"])

# The lanes over the zones' own stretch (--time): 1000 columns of some 0.1 ms,
# so that inner's 1 ms holds columns of its own however long the recording.
def ats(name):
    return [z[name][k]["at_ns"] for k in ("p50", "p90", "p99", "max")]
lo, hi = max(0, min(ats("outer")) - 62000000), max(ats("overlap.b")) + 40000000
lanes = report(out, "--lanes", "--lane-width", "1000", "--time", "%dns..%dns" % (lo, hi))["lanes"]
check(lanes["start_ns"] - rep["header"]["start_time"] == lo and
      lanes["bucket_ns"] * 1000 <= hi - lo + 1000,
      "the lanes span --time: from %d ns, %d ns a column" % (lanes["start_ns"] - rep["header"]["start_time"], lanes["bucket_ns"]))
check(lanes.get("zone_names", [])[:2] == ["outer", "inner"], "the lanes name the zones: %s" % lanes.get("zone_names"))
row = lanes["lanes"][0].get("zones", "")
check("a" in row and "b" in row and "e" in row, "a lane shows the zones it was in: %r" % row)

# A launched program's first zones, from main's first instruction with no
# wait (500 of 20 us: 10 ms, before the recorder finds the module): the
# recorder tells the program it is coming (MICROSCOPE_PROBES_READER), the
# selected sites write from the start and the recorder reads what they
# wrote. A selection that names none of them writes none.
out = d + "/first.mscap"
p = record(out, [fixture("probes"), "first", "500"], ["--probes", "first"])
rep, z = zones(out)
check(z.get("first", {}).get("count") == 500 and "recording 1" in p.stdout,
      "all 500 of a launched program's first zones: %s (%s)" %
      ({k: r["count"] for k, r in z.items()}, p.stdout.strip()))
out = d + "/first-none.mscap"
record(out, [fixture("probes"), "first", "500"], ["--probes", "other*"])
rep, z = zones(out)
check("first" not in z, "a selection that does not name them records none: %s" % sorted(z))

# Run-time sites defined mid-recording.
out = d + "/runtime.mscap"
record(out, [fixture("probes"), "runtime", "50"], ["--probes", "rt.*"])
rep, z = zones(out)
check(z.get("rt.zone", {}).get("count") == 50, "50 run-time zones: %s" % {k: r["count"] for k, r in z.items()})
check(z["rt.zone"]["file"] == "gen.c" and z["rt.zone"]["line"] == 7, "its file and line: %s:%d" % (z["rt.zone"]["file"], z["rt.zone"]["line"]))
check(rep["zones"]["marks"] == 50, "50 run-time marks: %d" % rep["zones"]["marks"])

# Static sites of a library loaded mid-recording.
out = d + "/dlopen.mscap"
record(out, [fixture("probes"), "dlopen", "40", fixture("libprobes_plugin.so")], ["--probes", "plugin.*"])
rep, z = zones(out)
check(z.get("plugin.zone", {}).get("count") == 40, "40 zones of a dlopened library: %s" %
      {k: r["count"] for k, r in z.items()})
check(z["plugin.zone"]["file"].endswith("probes_plugin.c"), "its site's file: %s" % z["plugin.zone"]["file"])

# A reader that falls behind: the program drops what its ring cannot hold,
# counts it, and the capture says so.
out = d + "/behind.mscap"
record(out, [fixture("probes"), "killed", "0.5"], ["--probes", "all"])
rep, z = zones(out)
dropped = problems(rep).get("probe records dropped (a thread's ring was full)")
check(dropped is not None and int(dropped["example"].split()[0]) > 0,
      "records dropped are counted: %s" % problems(rep))
check(rep["header"]["lost_records"] >= int(dropped["example"].split()[0]),
      "and counted as lost: %s" % rep["header"]["lost_records"])
check(z["pair"]["count"] > 10000, "what the ring held was recorded: %d pairs" % z["pair"]["count"])

# C++ scoped zones, in plain, inline and template functions; a selection.
out = d + "/cpp.mscap"
record(out, [fixture("probes_cpp"), "50"], ["--probes", "all"])
rep, z = zones(out)
for name in ("cpp.round", "cpp.inline", "cpp.template"):
    check(z.get(name, {}).get("count") == 50, "%s: 50 occurrences: %s" % (name, z.get(name, {}).get("count")))
check(z["cpp.round"]["self_ns"] < 0.1 * z["cpp.round"]["total_ns"], "cpp.round holds the others")
record(out, [fixture("probes_cpp"), "20"], ["--probes", "cpp.in*,cpp.round"])
rep, z = zones(out)
check(sorted(z) == ["cpp.inline", "cpp.round"], "--probes cpp.in*,cpp.round selects two: %s" % sorted(z))
p = run([MICROSCOPE, "record", "--probes", "a*b", "--", "true"])
check(p.returncode != 0 and "'*' only ends a prefix" in p.stderr, "a bad selection is refused: %r" % p.stderr)

# MICROSCOPE_DISABLE: every macro is nothing; no section, no zone, the same work.
disabled = fixture("probes_disabled")
sections = run(["readelf", "-S", "-W", disabled]).stdout
check("microscope_" not in sections, "no microscope_ section with MICROSCOPE_DISABLE")
p = record(out, [disabled, "20"], ["--probes", "all"])
check("rounds 20" in p.stdout, "the disabled program did its work: %r" % p.stdout)
rep, z = zones(out)
check(not z, "and recorded no zone: %s" % sorted(z))

# A running program, attached to: its sites are found and switched on.
out = d + "/attach.mscap"
target = subprocess.Popen([fixture("probes"), "attach", "6"], stdout=subprocess.PIPE, text=True)
try:
    check(target.stdout.readline().strip() == "ready", "target started")
    time.sleep(0.3)
    p = run([MICROSCOPE, "record", "-q", "-o", out, "--pid", str(target.pid), "-d", "2s",
             "--probes", "all"], timeout=60)
    check(p.returncode == 0, "record --pid exited 0: %s" % p.stderr)
    rep, z = zones(out)
    n = z.get("attach.spin", {}).get("count", 0)
    check(400 <= n <= 2100, "attached: %d zones of 1 ms in 2 s" % n)
    check(target.wait(timeout=60) == 0, "the program ran on to its end")
finally:
    if target.poll() is None:
        target.kill()
        target.wait()

# A recorder killed mid-run: the program runs on, switches its sites off
# once the recorder is silent for its timeout, and its writes stay cheap.
target = subprocess.Popen([fixture("probes"), "killed", "5"], stdout=subprocess.PIPE, text=True)
try:
    check(target.stdout.readline().strip() == "ready", "target started")
    rec = subprocess.Popen([MICROSCOPE, "record", "-q", "-o", d + "/killed.mscap", "--pid",
                            str(target.pid), "--probes", "all"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Killed once it has switched the program's sites on (which a
    # sanitized recorder on a busy machine takes seconds to do), half a
    # second into the recording.
    check(read_line(target.stdout, "recorded", 60), "the recorder switched the program's sites on")
    time.sleep(0.5)
    rec.send_signal(signal.SIGKILL)
    rec.wait()
    so, _ = target.communicate(timeout=60)
    check(target.returncode == 0, "the program ended by itself (%d)" % target.returncode)
    m = re.search(r"was_recording (\d) pair_ns ([\d.]+) state (\w+)", so)
    check(m is not None, "the program said how it went: %r" % so)
    check(m.group(1) == "1", "it was recorded before the kill")
    check(m.group(3) == "lost", "it switched its sites off after the reader went: %r" % so)
    check(float(m.group(2)) < 50, "a zone pair costs %s ns after the kill" % m.group(2))
finally:
    if target.poll() is None:
        target.kill()
        target.wait()

# A module of another layout version is refused by name.
if shutil.which("objcopy"):
    other = d + "/probes-v99"
    ctl = d + "/ctl.bin"
    p = run(["objcopy", "--dump-section", "microscope_ctl=" + ctl, fixture("probes"), d + "/scratch"])
    check(p.returncode == 0, "objcopy dumps the control block: %s" % p.stderr)
    with open(ctl, "r+b") as f:
        f.seek(8)
        f.write((99).to_bytes(4, "little"))
    p = run(["objcopy", "--update-section", "microscope_ctl=" + ctl, fixture("probes"), other])
    check(p.returncode == 0, "objcopy writes version 99: %s" % p.stderr)
    os.chmod(other, 0o755)
    out = d + "/v99.mscap"
    record(out, [other, "attach", "0.3"], ["--probes", "all"])
    rep, z = zones(out)
    check(not z, "no zones read from a version 99 module: %s" % z)
    refused = problems(rep).get("probes of a module refused or partly read")
    check(refused is not None and "layout version 99" in refused["example"] and
          "probes-v99" in refused["example"], "the refusal names file and version: %s" % problems(rep))

# Snapshots the program's own probes trigger (record --snapshot-when): the
# counter passes 50 once and stays past it for 150 more rounds, which the
# interval holds back: exactly one snapshot, holding the record that fired.
# The fixture's rounds take 3 ms each (some 0.6 s in all), far inside the
# default 10 s between snapshots.
trig = d + "/trig.mscap"
record(trig, [fixture("probes"), "timed", "200"],
       ["--rolling", "30s", "--snapshot-when", "counter:rounds done>50"])
shots = sorted(glob.glob(d + "/trig.*.mscap"))
check(shots == [d + "/trig.1.mscap"], "one snapshot from the counter's trigger: %s" % shots)
sh = report(shots[0])["header"]
check(sh["part"] == "snapshot" and
      "snapshot taken when counter:rounds done>50 (the counter was 51)" in sh["notes"],
      "the snapshot says what fired it: %s" % sh["notes"][-1:])
notes = report(trig)["header"]["notes"]
check("--snapshot-when: 1 snapshot taken, 149 more firings held back (at most one snapshot per "
      "--snapshot-min-interval)" in notes, "the recording counts the firings held back: %s" % notes[-1:])
# Its rows reach where it fired: the counter's records in it up to 51 at least.
q = run([MICROSCOPE, "query", shots[0], "select max(value) as v from counters where name = 'rounds done'"])
top = json.loads(q.stdout)[0]["v"] if q.returncode == 0 else None
check(top is not None and 51 <= top < 200, "the snapshot holds the counter up to where it fired: %s" % top)
# A zone that lasted over 1 ms (every 2 ms "sleep"), at most one per 150 ms:
# several snapshots, none sooner than that after the one before.
for f in glob.glob(d + "/trig*.mscap"):
    os.unlink(f)
record(trig, [fixture("probes"), "timed", "200"],
       ["--rolling", "30s", "--snapshot-when", "zone:sleep>1ms", "--snapshot-min-interval", "150ms"])
# (Counted, not timed: a snapshot is cut at the end of the round of records
# that fired it, so a recorder behind its program cuts several at once.)
shots = sorted(glob.glob(d + "/trig.*.mscap"))
ran = report(trig)["header"]["duration_ns"]
check(2 <= len(shots) <= 1 + ran / 150e6,
      "a zone trigger at most every 150 ms: %d snapshots in %.0f ms" % (len(shots), ran / 1e6))
# One that never fires takes none; the refusals name the form.
for f in glob.glob(d + "/trig*.mscap"):
    os.unlink(f)
record(trig, [fixture("probes"), "timed", "20"], ["--rolling", "30s", "--snapshot-when", "zone:sleep>1s"])
check(glob.glob(d + "/trig.*.mscap") == [] and
      "--snapshot-when: 0 snapshots taken" in report(trig)["header"]["notes"],
      "a trigger that never fires takes no snapshot")
# What the recording itself measures: a thread's share of a CPU over the
# last second of its samples (worker-c burns some 1 s of CPU in all).
for f in glob.glob(d + "/trig*.mscap"):
    os.unlink(f)
record(trig, [fixture("threads"), "1000"], ["--rolling", "30s", "--snapshot-when", "cpu:worker-c > 20%"])
shots = sorted(glob.glob(d + "/trig.*.mscap"))
why = [n for n in report(shots[0])["header"]["notes"] if n.startswith("snapshot taken when")] if shots else []
check(len(shots) == 1 and len(why) == 1 and re.search(r"\(\d+(\.\d+)?% of one CPU over the last second\)$", why[0]) and
      float(re.search(r"\(([\d.]+)%", why[0]).group(1)) > 20,
      "a thread's CPU share fires one snapshot: %s, %s" % (shots, why))
# Time off CPU in a state: the sleep fixture sleeps 8 ms of every 10 ms,
# some 0.8 s a second, past 500 ms once a second's intervals are in.
for f in glob.glob(d + "/trig*.mscap"):
    os.unlink(f)
record(trig, [fixture("offcpu"), "sleep", "150"],
       ["--rolling", "30s", "--off-cpu", "--snapshot-when", "offcpu:sleeping>500ms"])
shots = sorted(glob.glob(d + "/trig.*.mscap"))
why = [n for n in report(shots[0])["header"]["notes"] if n.startswith("snapshot taken when")] if shots else []
m = re.search(r"\(([\d.]+) ms sleeping in the intervals that ended in the last second\)$", why[0]) if why else None
check(len(shots) == 1 and m is not None and float(m.group(1)) > 500,
      "time asleep fires one snapshot: %s, %s" % (shots, why))
for extra, want in ((["--snapshot-when", "mark:round"], "give --rolling TIME or --continuous DIR"),
                    (["--rolling", "5s", "--snapshot-when", "offcpu:sleeping>1ms"], "with --off-cpu"),
                    (["--rolling", "5s", "--snapshot-when", "offcpu:dozing>1ms"], "no off-CPU state 'dozing'"),
                    (["--rolling", "5s", "--snapshot-when", "zone:x<3ms"], "use '>'"),
                    (["--rolling", "5s", "--snapshot-when", "net>5"], "unknown kind 'net'"),
                    (["--rolling", "5s", "--snapshot-when", "counter:n>lots"], "is not a number")):
    p = record(trig, [fixture("probes"), "timed", "1"], extra, expect_rc=None)
    check(p.returncode != 0 and want in p.stderr, "%s refused: %s" % (extra, p.stderr.strip()[-150:]))
