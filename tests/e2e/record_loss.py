"""Loss is data: with a one-page ring at 40 kHz the recorder cannot keep up;
the lost records are counted in the capture, by kind, and shown by report,
and each loss is a gap (a window not known) in every timeline."""
import re

from common import *

require_perf()
d = tmpdir()
out = d + "/loss.mscap"
p = run([MICROSCOPE, "record", "-q", "-g", "fp", "-m", "1", "-F", "40000", "-o", out, "--", fixture("threads"), "300"])
check(p.returncode == 0, "record with a one-page ring exits 0 (%s)" % p.stderr)
h = report(out)["header"]
check(h["lost_records"] > 0, "%d lost records counted" % h["lost_records"])
text = run([MICROSCOPE, "report", out]).stdout
check("lost        %d records" % h["lost_records"] in text, "report header shows the loss")
# As root, samples and task records (mappings, processes, threads) have
# rings of their own, so the header says which kind was lost.
if os.geteuid() == 0:
    tasks = h.get("lost_task_records")
    check(tasks is not None and 0 <= tasks <= h["lost_records"],
          "the loss is split by kind: %s of %d" % (tasks, h["lost_records"]))
    check("(%d of samples, %d of mappings, processes and threads" %
          (h["lost_records"] - tasks, tasks) in text, "report header names the kinds lost")
# The lost records may have held mappings: those of the processes still
# alive are read again from /proc, and the problems say so.
kinds = {pr["kind"] for pr in h["problems"]}
check("mappings re-read from /proc after records were lost" in kinds,
      "mappings re-read after the loss: %s" % sorted(kinds))
# Each LOST record is a gap: from its CPU's record before to the LOST
# record, which the kernel writes once the ring has room again. Their
# counts add up to the rings' LOST records, each lies inside the
# recording, and every view marks them (not idle time).
gaps = {g["cause"]: g for g in h.get("gaps", [])}
lost = gaps.get("lost records")
check(lost and lost["gaps"] > 0 and lost["count"] == h.get("ring_lost_records", h["lost_records"]) and
      set(gaps) == {"lost records"},
      "the loss is gaps of their own: %s (%d records lost, %s by the rings)" %
      (h.get("gaps"), h["lost_records"], h.get("ring_lost_records")))
check("gaps        %d lost records (" % lost["gaps"] in text, "report header counts the gaps")
lanes = report(out, "--lanes")["lanes"]
rows = lanes.get("gap_rows", [])
start, end = lanes["start_ns"], lanes["start_ns"] + h["duration_ns"]
check(len(rows) == lost["gaps"] and
      all(start - 1e9 <= r["begin_ns"] <= r["end_ns"] <= end + 1e9 and "cpu" in r for r in rows) and
      "L" in lanes.get("gaps", ""),
      "the lanes carry each gap with its CPU, inside the recording, and mark its columns: %s" %
      (rows[:2],))
text = run([MICROSCOPE, "report", out, "--lanes"]).stdout
check(re.search(r"^gaps \(every process\) +\|.*L", text, re.M), "report --lanes draws the gaps")
chrome = d + "/loss.json"
p = run([MICROSCOPE, "convert", out, "--to", "chrome", "-o", chrome])
spans = [e for e in json.load(open(chrome))["traceEvents"] if e.get("cat") == "gap"]
check(p.returncode == 0 and len(spans) == lost["gaps"] and
      all(e["name"] == "gap: lost records" and e["ph"] == "X" for e in spans) and
      sum(e["args"]["count"] for e in spans) == lost["count"],
      "the Chrome export has a labelled span per gap: %d (%s)" % (len(spans), spans[:1]))

# A snapshot when records are lost (record --snapshot-when lost>N): one.
trig = d + "/trig.mscap"
p = run([MICROSCOPE, "record", "-q", "-g", "fp", "-m", "1", "-F", "40000", "--rolling", "30s",
         "--snapshot-when", "lost>0", "-o", trig, "--", fixture("threads"), "300"])
shots = sorted(f for f in os.listdir(d) if f.startswith("trig.") and f != "trig.mscap")
notes = report(os.path.join(d, shots[0]))["header"]["notes"] if shots else []
shot_gaps = report(os.path.join(d, shots[0]))["header"].get("gaps", []) if shots else []
check(p.returncode == 0 and shots == ["trig.1.mscap"] and
      any(re.match(r"snapshot taken when lost>0 \(\d+ records lost\)$", n) for n in notes) and
      [g["cause"] for g in shot_gaps] == ["lost records"],
      "lost records fire one snapshot, which holds their gaps: %s %s %s" % (shots, notes[-1:], shot_gaps))

# Where nothing was lost, no gap is drawn.
quiet = d + "/quiet.mscap"
p = run([MICROSCOPE, "record", "-q", "-o", quiet, "--", fixture("split"), "0.5"])
qh = report(quiet)["header"]
check(p.returncode == 0 and qh["lost_records"] == 0 and qh["throttles"] == 0 and "gaps" not in qh and
      "gap_rows" not in report(quiet, "--lanes")["lanes"],
      "a recording that lost nothing has no gap: %s (lost %d, throttled %d)" %
      (qh.get("gaps"), qh["lost_records"], qh["throttles"]))

p = run([MICROSCOPE, "record", "-q", "-m", "3", "-o", out, "--", fixture("split"), "1"])
check(p.returncode == 1 and "--mmap-pages 3 is not a power of two" in p.stderr, "bad -m refused: %r" % p.stderr)
