"""Loss is data: with a one-page ring at 40 kHz the recorder cannot keep up;
the lost records are counted in the capture, by kind, and shown by report."""
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
p = run([MICROSCOPE, "record", "-q", "-m", "3", "-o", out, "--", fixture("split"), "1"])
check(p.returncode == 1 and "--mmap-pages 3 is not a power of two" in p.stderr, "bad -m refused: %r" % p.stderr)
